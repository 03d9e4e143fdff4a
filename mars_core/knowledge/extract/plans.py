"""The rule for plans: tasks with a goal and, when the turn gives one, a deadline."""

from __future__ import annotations

import re
from typing import Final

from mars_core.knowledge.extract.dates import _find_when, _When
from mars_core.knowledge.extract.lexicon import (
    _ADV,
    _CLAUSE_CUT,
    _CORRECTION,
    _EVENT_BAD_HEADS,
    _GOAL_BAD_WORDS,
    _PROGRESSIVE_BAD,
    _WE,
    _rx,
)
from mars_core.knowledge.extract.phrases import _blocked, _is_question, _third_person
from mars_core.knowledge.extract.rules import _Cand, _Ctx, _End
from mars_core.knowledge.extract.topics import _names_in, _plan_words
from mars_core.model import MemoryType, TaskStatus, utc

__all__: list[str] = []

# --- plans -----------------------------------------------------------------------------------

_REMIND = _rx(r"(?:^|[,;]\s*|\b(?:and|so|please|also)\s+)(?:(?:can|could|would|will)\s+you\s+"
              r"(?:please\s+)?|please\s+)?(?:remind\s+me\s+to|don't\s+let\s+me\s+forget\s+to|"
              r"do\s+not\s+let\s+me\s+forget\s+to|i\s+need\s+to\s+remember\s+to|"
              r"make\s+sure\s+i\s+remember\s+to)\s+")
_PLAN_CUES: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    (_rx(rf"{_WE}\s+(?:will|shall)\s+(?!not\b|never\b)|{_WE}'ll\s+(?!not\b|never\b)"), "will"),
    (_rx(rf"{_WE}(?:'m|'re|\s+am|\s+are)\s+(?:going\s+to|gonna)\s+(?!not\b|never\b)"),
     "is going to"),
    (_rx(rf"{_WE}(?:'m|'re|\s+am|\s+are)\s+(?:planning|intending)\s+(?:to|on)\s+"),
     "plans to"),
    (_rx(rf"{_WE}\s+{_ADV}(?:need|have|plan|intend|'ve\s+got|have\s+got)\s+to\s+"),
     "needs to"),
    (_rx(rf"{_WE}\s+(?:have|'ve\s+got|have\s+got)\s+(?:big\s+|some\s+)?plans\s+(?=for\s|to\s)"),
     "has plans"),
)
_PROGRESSIVE = _rx(rf"{_WE}(?:'m|'re|\s+am|\s+are)\s+([a-z]+ing)\s+")
_HAVE_EVENT = _rx(rf"{_WE}\s+(?:have|'ve\s+got|have\s+got)\s+(?=an?\s)")
_GOAL_CUT = re.compile(r"(?i)\s+(?:but|because|since|so\s+that|so|which|though|although|"
                       r"and\s+(?:i|we|it|that|thought|think|hope|then|so)|if)\b.*$")


def _rule_task(s: str, ctx: _Ctx) -> list[_Cand]:
    remind = _REMIND.search(s)
    when = _find_when(s, ctx.anchor)
    if remind is not None:
        return _task(s, remind.span(), "wants a reminder to", when, ctx,
                     reason="reminder request")
    if when is None or (when.deadline is not None and ctx.anchor is not None
                        and when.deadline < utc(ctx.anchor)) or _is_question(s):
        return []
    for rx, verb in _PLAN_CUES:
        m = rx.search(s)
        if m is not None and not _blocked(s, m.start()):
            return _task(s, m.span(), verb, when, ctx, reason=f"plan cue '{m.group(0).strip()}'")
    if not when.strict:
        return []
    m = _PROGRESSIVE.search(s)
    if m is not None and m.group(1).casefold() not in _PROGRESSIVE_BAD and not \
            _blocked(s, m.start()):
        return _task(s, (m.start(), m.start(1)), "is", when, ctx,
                     reason=f"progressive plan '{m.group(0).strip()}'")
    m = _HAVE_EVENT.search(s)
    if m is not None and not _blocked(s, m.start()):
        return _task(s, m.span(), "has", when, ctx, reason="'I have a <event>' with a date")
    return []


def _task(s: str, span: tuple[int, int], verb: str, when: _When | None, ctx: _Ctx, *,
          reason: str) -> list[_Cand]:
    start, end = span
    masked = list(s)
    for a, b in when.spans if when else ():
        masked[a:b] = " " * (b - a)
    tail = _CLAUSE_CUT.split("".join(masked)[end:], maxsplit=1)[0]
    goal = " ".join(_GOAL_CUT.sub("", tail).split()).strip(" .,!")
    goal = re.sub(r"(?i)\s+(?:too|as\s+well|coming\s+up|soon|then|again|either|instead)$", "",
                  goal)
    words = goal.casefold().split()
    if not words or len(words) > 14 or words[0] in ("not", "never", "be", "n't") or any(
            w.strip("'.,") in _GOAL_BAD_WORDS for w in words):
        return []
    if verb == "has" and (len(words) < 2 or words[1] in _EVENT_BAD_HEADS):
        return []
    if verb == "is going to" and re.match(r"(?i)(?:a|an|the|my)\s", goal):
        goal = f"go to {goal}"  # "I'm going to a concert"
    deadline = when.deadline if when else None
    due = f" (due {deadline:%Y-%m-%d %H:%M} UTC)" if deadline else ""
    phrase = f" {when.phrase}" if when else ""
    text = f"{ctx.who.display} {verb} {_third_person(goal, ctx.who)}{phrase}{due}"
    text = text.replace(" is going to go to ", " is going to ")
    if verb == "has plans":
        goal = re.sub(r"(?i)^(?:for|to)\s+", "", goal)
    moved = _RESCHEDULE.search(s) is not None or _CORRECTION.search(s) is not None
    return [_Cand(start, MemoryType.TASK, "task", " ".join(text.split()),
                  {"goal": goal, "status": TaskStatus.PENDING.value, "deadline": deadline},
                  reason, requires=_names_in(goal),
                  ends=(_End("plan", value="all", words=_plan_words(goal)),) if moved else ())]


_RESCHEDULE = _rx(r"\b(?:instead|rather|move\s+it|make\s+it|change\s+it|push\s+it|"
                  r"reschedule[ds]?)\b")
