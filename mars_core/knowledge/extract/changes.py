"""Constraints, and the rules for what a turn says is no longer so: likings ended, pets
renamed, plans cancelled, jobs changed."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from types import MappingProxyType
from typing import Final

from mars_core.knowledge.extract.lexicon import (
    _ADV,
    _ALT,
    _AVOID_VERBS,
    _BREEDS,
    _HYPOTHETICAL,
    _I,
    _IM,
    _NAME,
    _PET_KINDS,
    _PHATIC_IMPERATIVE_VERBS,
    _WE,
    _rx,
)
from mars_core.knowledge.extract.phrases import (
    _CLAUSE_CHARS,
    _blocked,
    _clause,
    _clean_object,
    _proper,
    _strip_article,
    _take,
    _third_person,
)
from mars_core.knowledge.extract.rules import (
    _BY_ORG,
    _article,
    _Cand,
    _Ctx,
    _employer,
    _End,
    _fact,
    _ok_name,
    _social,
)
from mars_core.knowledge.extract.topics import _norm, _plan_words
from mars_core.model import MemoryType, TaskStatus

__all__: list[str] = []

_IMPERATIVE = _rx(r"^(?:(?:and|also|please|so|oh|ok|okay|and\s+please)[,\s]+)*"
                  r"(don't|do\s+not|never|always|must\s+not|mustn't)\s+(?:ever\s+)?([a-z]+)")
_YOU_MUST = _rx(r"(?<![\w'])you\s+(?:must|should|shall)\s+(?:never|not|always)\s+([a-z]+)")
_AVOID = _rx(rf"{_I}\s+(?:never|don't|do\s+not|cannot|can't|won't)\s+"
             rf"({_ALT(_AVOID_VERBS)})\s+")


def _rule_constraint(s: str, ctx: _Ctx) -> list[_Cand]:
    out = []
    if ctx.who.direct:
        for rx in (_IMPERATIVE, _YOU_MUST):
            m = rx.search(s)
            verb = m.group(m.lastindex or 1).casefold() if m else ""
            if m is None or verb in _PHATIC_IMPERATIVE_VERBS or verb.endswith("ed"):
                continue
            clause = s[m.start():].strip().rstrip(".!")
            clause = re.sub(r"(?i)^(?:(?:and|also|please|so|oh|ok|okay)[,\s]+)+", "", clause)
            if len(clause.split()) > 25:
                continue
            clause = clause[:1].upper() + clause[1:]
            out.append(_fact(m.start(), ctx, "constraint", clause,
                             text=f"Constraint from {ctx.who.display.replace('The', 'the')}: "
                             f"{_third_person(clause, ctx.who)}",
                             reason=f"imperative constraint '{m.group(1).strip()}'",
                             kind="constraint", generality=0.8))
            break
    for m in _AVOID.finditer(s):
        obj = _clean_object(_take(s[m.end():], 4))
        if obj and not _blocked(s, m.start()):
            verb = m.group(1).casefold()
            changed = _CHANGE_CUE.search(_clause(s[m.end():])) is not None
            out.append(replace(_fact(
                m.start(), ctx, "avoids", f"{verb} {obj}",
                text=f"{ctx.who.display} does not {verb} {obj}{' anymore' if changed else ''}",
                reason="first-person constraint", kind="constraint", generality=0.8),
                ends=_pref_ends(obj) if changed else ()))
    return out


# --- changes: what a turn says is no longer so ----------------------------------------------

_CHANGE_CUE = _rx(r"\b(?:anymore|any\s+more|no\s+longer|these\s+days|nowadays)\b")
_INTO = _rx(rf"{_IM}\s+{_ADV}(?:(?:really|totally|super|very|so|big|massively)\s+)?into\s+")
_NOT_INTO = _rx(rf"{_IM}\s+(?:not\s+(?:really\s+|so\s+)?into\s+(?=[^.!?;]{{0,120}}\b"
                rf"(?:anymore|any\s+more)\b)|no\s+longer\s+into\s+)|{_I}(?:'ve|\s+have)\s+gone\s+"
                rf"off\s+")
_USED_TO = _rx(rf"{_I}\s+used\s+to\s+(love|like|enjoy|adore)\s+")
_NO_LONGER_LIKE = _rx(rf"{_I}\s+no\s+longer\s+(?:really\s+)?(like|love|enjoy)\s+")
_HABIT_VERBS: Final = MappingProxyType({
    "eat": "eats", "drink": "drinks", "smoke": "smokes", "use": "uses", "take": "takes",
    "buy": "buys", "watch": "watches", "play": "plays", "wear": "wears", "drive": "drives",
})
_HABIT = _ALT([*_HABIT_VERBS, *(v[:-1] + "ing" if v.endswith("e") else v + "ing"
                                for v in _HABIT_VERBS)])
_GAVE_UP = _rx(rf"{_I}(?:'ve|\s+have)?\s+{_ADV}(?:gave\s+up|given\s+up|stopped|quit|no\s+longer)"
               rf"\s+(?!(?:like|love|enjoy|adore|into|work|working)\b)(?:({_HABIT})\b\s*)?")


def _pref_ends(obj: str) -> tuple[_End, ...]:
    """What "I don't drink <obj> anymore" ends: a liking of it, a favourite that is it."""
    key = _norm(obj)
    return (_End("fact", f"attitude:{key}", "+"), _End("fact", "favourite", key),
            _End("fact", "favourite:", key))


def _base_verb(word: str) -> str:
    low = word.casefold()
    if low in _HABIT_VERBS:
        return low
    stem = low.removesuffix("ing")
    return stem if stem in _HABIT_VERBS else stem + "e"


def _rule_pref_change(s: str, ctx: _Ctx) -> list[_Cand]:
    """Preferences said to have changed: ``I'm into X`` (a liking), ``I used to love X``,
    ``I no longer like X``, ``I'm not into X anymore``, ``I've gone off X`` (a liking
    that ended), ``I gave up / stopped / quit / no longer <eating ...> X`` (a habit that
    ended, which also ends a liking of X)."""
    out = []
    who = ctx.who
    for m in _INTO.finditer(s):
        obj = _clean_object(_take(s[m.end():], 5))
        if obj and not _blocked(s, m.start()):
            out.append(_fact(m.start(), ctx, "likes", obj, text=f"{who.display} is into {obj}",
                             reason="preference cue 'into'", kind="preference", generality=0.7))
    for rx, pred, shown in ((_NOT_INTO, "noLongerLikes", "is no longer into"),
                            (_USED_TO, "usedToLike", "used to {verb}"),
                            (_NO_LONGER_LIKE, "noLongerLikes", "no longer {verb}s")):
        for m in rx.finditer(s):
            obj = _clean_object(_take(s[m.end():], 5))
            if obj and not _blocked(s, m.start()):
                verb = m.group(1).casefold() if m.lastindex else ""
                out.append(_fact(m.start(), ctx, pred, obj,
                                 text=f"{who.display} {shown.format(verb=verb)} {obj}",
                                 reason="preference change", kind="preference",
                                 generality=0.7))
    for m in _GAVE_UP.finditer(s):
        tail = s[m.end():]
        obj = _clean_object(_take(tail, 4)) if tail.strip() else None
        verb = _base_verb(m.group(1)) if m.group(1) else None
        if (not obj and not verb) or _blocked(s, m.start()) or (obj and (
                obj[:1].isupper() or obj.casefold().startswith(("my job", "my position")))):
            continue  # "I quit Tidewave": a job (see _rule_job)
        if verb:
            text = f"{who.display} no longer {_HABIT_VERBS[verb]}{f' {obj}' if obj else ''}"
            value = f"{verb} {obj}" if obj else verb
        else:
            text, value = f"{who.display} gave up {obj}", str(obj)
        out.append(replace(_fact(m.start(), ctx, "avoids", value, text=text,
                                 reason="habit given up", kind="constraint", generality=0.8),
                           ends=_pref_ends(obj) if obj else ()))
    return out


_PET_WORD = _ALT(sorted({*_BREEDS, *(w for ws in _PET_KINDS.values() for w in ws)},
                        key=len, reverse=True))
_THE_PET = rf"(?i:the|our|my)\s+(?P<pet>(?i:{_PET_WORD}))"
_RENAMES: Final = (
    re.compile(rf"{_WE}(?:'ve|\s+have)?\s+{_ADV}(?i:renamed|re-named)\s+(?:{_THE_PET}|"
               rf"(?P<old>{_NAME}))\s+(?:(?i:to|as)\s+)?(?P<new>{_NAME})\b"),
    re.compile(rf"{_WE}(?:'ve|\s+have)?\s+{_ADV}(?i:changed)\s+{_THE_PET}'s\s+(?i:name)\s+"
               rf"(?i:to)\s+(?P<new>{_NAME})\b"),
    re.compile(rf"{_THE_PET}'s\s+(?i:new\s+name\s+is|name\s+is\s+now)\s+(?P<new>{_NAME})\b"),
    re.compile(rf"(?:{_THE_PET}|(?P<old>{_NAME}))\s+(?i:is\s+now\s+called|is\s+now\s+named|"
               rf"goes\s+by)\s+(?P<new>{_NAME})\b"),
    re.compile(rf"(?:{_THE_PET}|(?P<old>{_NAME}))\s+(?i:is\s+called|is\s+named)\s+"
               rf"(?P<new>{_NAME})\s+(?i:now)\b"),
)


def _pet_kind(word: str) -> str:
    low = word.casefold()
    for kind, words in _PET_KINDS.items():
        if low in words:
            return kind
    return _BREEDS.get(low, low)


def _rule_rename(s: str, ctx: _Ctx) -> list[_Cand]:
    """A pet's new name: ``we renamed the dog (to) <New>``, ``we renamed <Old> (to)
    <New>``, ``we changed the dog's name to <New>``, ``the dog's new name is <New>``,
    ``<Old>/the dog is now called|goes by <New>``. The social memory of the new name
    replaces the old one (named, or the speaker's only dog) and a ``<dog>'s name``
    attribute."""
    out = []
    for rx in _RENAMES:
        for m in rx.finditer(s):
            new, old = m.group("new"), m.groupdict().get("old")
            pet = m.groupdict().get("pet")
            if not _ok_name(new) or (old and not _ok_name(old)) or _blocked(s, m.start()):
                continue
            kind = _pet_kind(pet) if pet else "pet"
            ends = [_End("person", old)] if old else [
                _End("relation", words=_PET_KINDS.get(kind, frozenset({kind})))]
            ends += [_End("fact", f"attr:{kind}'s name"), _End("fact", "attr:pet's name")]
            cand = _social(m.start(), ctx, new, kind, related_to=ctx.who.name,
                           text=f"{new} is {ctx.who.possessive} {kind}",
                           reason="renamed pet")
            out.append(replace(cand, ends=tuple(ends), change="rename"))
    return out


_EVENT_NOUNS: Final = frozenset({
    "trip", "holiday", "holidays", "vacation", "plan", "plans", "dinner", "lunch", "brunch",
    "breakfast", "party", "wedding", "meeting", "appointment", "visit", "date", "game",
    "match", "concert", "show", "event", "booking", "reservation", "flight", "class",
    "lesson", "session", "call", "interview", "gig", "tour", "weekend", "drinks", "barbecue",
    "bbq", "picnic", "celebration", "ceremony", "festival", "conference", "workshop",
    "hike", "getaway", "reunion", "sleepover", "playdate", "viewing", "move", "surgery",
    "checkup", "check-up", "shoot", "rehearsal", "recital", "practice", "training", "course",
})
"""Heads of "the <x> is off": a plan, not a device ("the heating is off")."""
_CANCELLED = r"(?i:cancell?ed|called\s+off|scrapped|axed)"
_IS_OFF = re.compile(rf"(?:\s+(?i:is|has\s+been|was|got|is\s+now)\s+|'s\s+)"
                     rf"(?:(?i:officially|now|been|just|all|unfortunately|sadly)\s+)*"
                     rf"(?P<verb>(?i:off)|{_CANCELLED})\b")
_CLAUSE_END = re.compile(r"[,;:.!?()]")
_CANCELS = re.compile(rf"(?<![\w'])(?P<who>[Ii]|[Ww]e|[Tt]hey|[Ss]he|[Hh]e|{_NAME})(?:'ve|\s+have|"
                      rf"\s+has|\s+had\s+to)?\s+{_ADV}{_CANCELLED}\s+(?P<x>[^,;:.!?()]{{1,80}})")
_NOT_GOING = re.compile(
    rf"{_WE}(?:'m|'re|\s+am|\s+are)\s+(?i:not\s+(?:going\s+to|gonna)\s+(?:go\s+to\s+)?)"
    rf"(?P<x>[^,;:.!?()]{{1,80}}?)\s+(?i:anymore|any\s+more|after\s+all)\b"
    rf"|{_WE}\s+(?i:won't|will\s+not)\s+(?i:be\s+going\s+to|go\s+to|make\s+it\s+to)\s+"
    rf"(?P<y>[^,;:.!?()]{{1,80}})")
_CANCEL_IT = _rx(r"^(?:(?:please|oh|and|also|ok|okay|actually)[,\s]+)*(?:(?:can|could|would|"
                 r"will)\s+you\s+(?:please\s+)?)?(?:cancel|scrap|drop|delete|forget\s+about|"
                 r"never\s+mind)\s+(?P<x>(?:the|my|that|our)\s+[^,;:.!?()]{1,80})")


_LAST_CLAUSE = re.compile(r"(?i)\b(?:and|but|so|because|since|though|although|that|which|"
                          r"then|now)\b")
_PRONOUNS: Final = frozenset({"i", "we", "they", "she", "he"})


def _cancel(pos: int, ctx: _Ctx, what: str, extra: Iterable[str] = ()) -> _Cand:
    """A cancellation of the pending plan best matching ``what`` (completed in
    :func:`extract` from the plan it ends; dropped when none matches)."""
    words = _plan_words(what) | {_norm(w) for w in extra}
    return _Cand(pos, MemoryType.TASK, "task", what,
                 {"goal": what, "status": TaskStatus.CANCELLED.value, "deadline": None},
                 "cancelled plan", ends=(_End("plan", words=words),), needs_end=True,
                 change="cancel")


def _rule_cancel(s: str, ctx: _Ctx) -> list[_Cand]:
    """Plans called off: ``the <x> is off|cancelled|called off`` (``off`` only for a
    plan-like <x>: trip, dinner, party ...), ``I/we/<Name> cancelled|called off <x>``,
    ``we're not going to <x> anymore|after all``, ``we won't go to <x>``, and, to the
    assistant, ``cancel|scrap|never mind the <x>``. Each ends the pending task that shares
    the most words with <x> (and the person who cancelled it); nothing when none does."""
    out = []
    for m in _IS_OFF.finditer(s):
        said = _CLAUSE_END.split(s[max(0, m.start() - 80):m.start()])[-1]
        what = " ".join(_LAST_CLAUSE.split(said)[-1].split()[-6:])
        if not what or any(w in _HYPOTHETICAL for w in said.casefold().split()) or \
                _blocked(s, m.start() - len(said.lstrip())):
            continue
        if m.group("verb").casefold() == "off" and not _plan_words(what) & _EVENT_NOUNS:
            continue  # "the heating is off"
        out.append(_cancel(m.start(), ctx, what))
    for m in _CANCELS.finditer(s):
        who = m.group("who")
        pronoun = who.casefold() in _PRONOUNS
        if _blocked(s, m.start()) or not (pronoun or _ok_name(who)):
            continue
        out.append(_cancel(m.start(), ctx, m.group("x").strip(), [] if pronoun else [who]))
    for m in _NOT_GOING.finditer(s):
        if not _blocked(s, m.start()):
            out.append(_cancel(m.start(), ctx, (m.group("x") or m.group("y")).strip()))
    return out + _rule_cancel_request(s, ctx)


def _rule_cancel_request(s: str, ctx: _Ctx) -> list[_Cand]:
    """``(Can you) cancel|scrap|never mind the <x>``, said to the assistant (also as a
    question)."""
    m = _CANCEL_IT.search(s)
    if m is None or not ctx.who.direct:
        return []
    return [_cancel(m.start(), ctx, m.group("x").strip())]


_AND_I = rf"(?:{_I}(?:'ve|\s+have)?\s+|\band\s+(?:then\s+)?)"  # "I left X and started at Y"
_STARTED = _rx(rf"{_AND_I}{_ADV}started\s+(?:(?:a\s+(?:new\s+)?job|my\s+new\s+job|"
               rf"working|work)\s+)?(?=(?:at|with|for)\s)")
_JOINED = _rx(rf"{_AND_I}{_ADV}joined\s+(?=\S)")
_FIRST_PERSON_CLAUSE = re.compile(rf"\s*(?:(?:so|then|but)\s+)?(?:\w+\s+){{0,2}}{_I}\b")
_HIRED = _rx(rf"{_I}(?:'ve|\s+have|\s+was|\s+got|\s+just\s+got)?\s+{_ADV}(?:been\s+)?hired\s+"
             rf"(?=(?:at|by)\s)")
_GOT_JOB = _rx(rf"{_I}(?:'ve|\s+have)?\s+{_ADV}(got|landed|took|taken|accepted)\s+(?:a|an|the)\s+"
               rf"(?:new\s+|full-time\s+|permanent\s+)?(job|position|role|offer)\s+"
               rf"(?=(?:at|with|from)\s)")
_PROMOTED = _rx(rf"{_I}(?:'ve|\s+have|\s+was|\s+got|\s+just\s+got)?\s+{_ADV}(?:been\s+|got\s+)?"
                rf"promoted\s+to\s+")
_LEFT = _rx(rf"{_I}(?:'ve|\s+have)?\s+{_ADV}(?:left|quit|resigned\s+from)\s+(my\s+(?:old\s+)?"
            rf"(?:job|position|role)\s+(?:at|with)\s+)?")
_CAREER_MOVE = _rx(r"\b(?:joined|started|job|jobs|new\s+role|for\s+good|after\s+\w+\s+years?|"
                   r"handed\s+in|notice|resigned|career|hired)\b")
_JOB_WORDS = _rx(r"\b(?:job|jobs|work|working|hired|role|position|offer|company|firm|employer|"
                 r"career|colleagues?|boss|left|quit|resigned|notice|salary|team)\b")
_AS_JOB = _rx(r"\bas\s+(an?)\s+")


def _new_job(pos: int, ctx: _Ctx, org: str, rest: str, cue: str) -> list[_Cand]:
    """``worksAt <org>``, and ``worksAs <job>`` when the clause goes on "as a <job>"."""
    out = [_fact(pos, ctx, "worksAt", org, text=f"{ctx.who.display} works at {org}",
                 reason=f"job change '{cue}'")]
    m = _AS_JOB.search(_clause(rest))
    phrase = _take(_clause(rest)[m.start(1):], 4) if m else None
    job = _clean_object(_strip_article(phrase)) if phrase else None
    if job:
        out.append(_fact(pos, ctx, "worksAs", job,
                         text=f"{ctx.who.display} works as {_article(job)}",
                         reason=f"job change '{cue} ... as'"))
    return out


def _first_person(s: str, m: re.Match[str]) -> bool:
    """The subject of the cue is the speaker: "I ... started", or "and started" after
    a clause of theirs ("I left Tidewave and started at ..."), not after Ana's; and the
    cue is not hypothetical (:func:`_blocked`)."""
    conj = re.match(r"(?i)and\s+(?:then\s+)?", m.group(0))
    if conj is None:
        return not _blocked(s, m.start())
    clause = re.split(r"[,;]", s[max(0, m.start() - 200):m.start()])[-1]
    return _FIRST_PERSON_CLAUSE.match(clause) is not None and not _blocked(
        s, m.start() + conj.end())


def _rule_job(s: str, ctx: _Ctx) -> list[_Cand]:
    """Job changes: ``I started (a new job) at <Org>``, ``I joined <Org>`` (with a word of
    work in the sentence: "left", "job", "as a <job>" ...), ``I got|landed|took|accepted
    a job|position|role at <Org>``, ``I was hired at|by <Org>``, ``I got promoted to
    <job>``, ``I left|quit <Org>`` (when it is the known employer, or "my job at <Org>")."""
    out: list[_Cand] = []
    for rx in (_STARTED, _HIRED, _GOT_JOB):
        for m in rx.finditer(s):
            if rx is _GOT_JOB and m.group(2).casefold() == "offer" and \
                    m.group(1).casefold() != "accepted":
                continue  # an offer received is not a job taken
            tail = s[m.end():m.end() + _CLAUSE_CHARS]
            org = _employer(tail, _BY_ORG)  # "hired by", "an offer from"
            if org and _first_person(s, m):
                rest = tail[tail.find(org) + len(org):]
                out += _new_job(m.start(), ctx, org, rest, m.group(0).strip())
    for m in _JOINED.finditer(s):
        tail = s[m.end():m.end() + _CLAUSE_CHARS]
        org = _proper(tail)
        if not org or not _first_person(s, m):
            continue
        rest = _clause(tail[tail.find(org) + len(org):])
        before = s[max(0, m.start() - _CLAUSE_CHARS):m.start()]
        if _JOB_WORDS.search(f"{before} {rest}") or _AS_JOB.search(rest):
            out += _new_job(m.start(), ctx, org, rest, "joined")
    for m in _PROMOTED.finditer(s):
        phrase = _take(s[m.end():], 4)
        job = _clean_object(_strip_article(phrase)) if phrase else None
        if job and not _blocked(s, m.start()):
            out.append(_fact(m.start(), ctx, "worksAs", job,
                             text=f"{ctx.who.display} works as {_article(job)}",
                             reason="job change 'promoted to'"))
    career = _CAREER_MOVE.search(s) is not None
    for m in _LEFT.finditer(s):
        org = _proper(s[m.end():m.end() + _CLAUSE_CHARS])
        if not org or _blocked(s, m.start()) or (
                m.group(0).split()[-1].casefold() == "left" and m.group(1) is None
                and not career):
            continue  # "I left Tidewave at six" is not a resignation
        out.append(replace(
            _fact(m.start(), ctx, "formerlyWorkedAt", org,
                  text=f"{ctx.who.display} no longer works at {org}", reason="job change 'left'"),
            ends=(_End("fact", "worksAt", _norm(org)),), needs_end=m.group(1) is None))
    return out
