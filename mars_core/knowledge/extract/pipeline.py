"""The entry point: :func:`extract` runs the rules over a turn and resolves what the
candidates end against :class:`~mars_core.knowledge.extract.KnownFacts`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Final

from mars_core.knowledge.extract.changes import (
    _rule_cancel,
    _rule_cancel_request,
    _rule_constraint,
    _rule_job,
    _rule_pref_change,
    _rule_rename,
)
from mars_core.knowledge.extract.lexicon import _CORRECTION
from mars_core.knowledge.extract.phrases import _is_question, _Subject, split_speaker
from mars_core.knowledge.extract.plans import _rule_task
from mars_core.knowledge.extract.rules import (
    _article,
    _Cand,
    _Ctx,
    _End,
    _Rule,
    _rule_have,
    _rule_identity,
    _rule_like,
    _rule_my,
    _rule_place,
    _rule_social,
    _rule_work,
)
from mars_core.knowledge.extract.topics import (
    EPISODE,
    Extracted,
    KnownFacts,
    Topic,
    _norm,
    _Plan,
    topic_of,
)
from mars_core.model import MemoryType, Predicate, TaskStatus
from mars_core.nlp.rules import normalise_apostrophes, split_sentences
from mars_core.nlp.signals import TextSignals

__all__ = ["extract"]

_RULES: Final[tuple[_Rule, ...]] = (
    _rule_place, _rule_work, _rule_job, _rule_identity, _rule_have, _rule_my, _rule_like,
    _rule_pref_change, _rule_constraint, _rule_social, _rule_rename, _rule_cancel,
)


# --- the entry point --------------------------------------------------------------------------


def _subject(role: str, speaker: str | None, text: str) -> tuple[_Subject | None, str]:
    prefixed, body = split_speaker(text)
    if speaker is not None:
        if prefixed is not None and prefixed.casefold() == speaker.casefold():
            text = body
        return _Subject(speaker, direct=False), text
    if prefixed is not None:
        return _Subject(prefixed, direct=False), body
    if role.casefold() in ("user", "human"):
        return _Subject("user", direct=True), text
    return None, text


def _correction(text: str, signals: TextSignals | None) -> bool:
    if _CORRECTION.search(text):
        return True
    return signals is not None and signals.correction and any(
        c.startswith("correction:") and c != "correction:sorry" for c in signals.cues)


def _candidates(text: str, ctx: _Ctx) -> list[_Cand]:
    out: list[_Cand] = []
    offset = 0
    for sent in split_sentences(text):
        offset = max(text.find(sent, offset), offset)
        found = _rule_task(sent, ctx)
        if not _is_question(sent):
            for rule in _RULES:
                found.extend(rule(sent, ctx))
        else:
            found.extend(_rule_cancel_request(sent, ctx))
        out.extend(replace(c, pos=offset + c.pos) for c in found)
    return sorted(out, key=lambda c: c.pos)


def _links(c: _Cand, known: KnownFacts) -> tuple[tuple[Predicate, str], ...]:
    links: list[tuple[Predicate, str]] = [(Predicate.DERIVES_FROM, EPISODE)]
    for person in c.related:
        links += [(Predicate.FRIEND_OF, nid) for nid in known.people(person)]
    if c.type is MemoryType.TASK:
        for name in sorted(c.requires):
            links += [(Predicate.REQUIRES, nid) for nid in known.people(name)]
    else:
        links += [(Predicate.ATTACHES_TO_GOAL, t) for t in known.goals_mentioning(c.names)]
    return tuple(dict.fromkeys(links))


def extract(
    role: str,
    text: str,
    signals: TextSignals | None,
    *,
    speaker: str | None,
    known: KnownFacts,
    anchor: datetime | None = None,
) -> list[Extracted]:
    """Project one conversational turn onto typed memories with fixed cue rules.

    Args:
        role: ``user``, ``assistant``, ... (first person is extracted only for a named
            speaker or the user).
        text: the turn; a leading ``"Speaker: "`` names the speaker when ``speaker`` is
            ``None`` (and is stripped when it equals ``speaker``).
        signals: the turn's :class:`~mars_core.nlp.TextSignals`, if already computed;
            only its correction cue is used (the rules parse the text themselves).
        speaker: who "I" is (LoCoMo speaker name), or ``None``.
        known: the namespace's :class:`KnownFacts`, for supersession and links.
        anchor: "now" for relative dates (naive = UTC); without it, relative dates
            give tasks without a deadline.

    Returns:
        The memories to store, in text order; at most one per topic (the last mention
        wins), none that repeats an active memory's value.
    """
    text = normalise_apostrophes(text)
    who, body = _subject(role, speaker, text)
    if who is None or not body.strip():
        return []
    corrected = _correction(body, signals)
    chosen: dict[object, tuple[_Cand, Topic | None]] = {}
    for i, cand in enumerate(_candidates(body, _Ctx(who, anchor))):
        topic = topic_of(cand.type, cand.payload)
        chosen.pop(topic.key if topic else i, None)
        chosen[topic.key if topic else i] = (cand, topic)
    out = []
    for found, said in sorted(chosen.values(), key=lambda ct: ct[0].pos):
        entry = known.entry(said) if said else None
        if entry is not None and said is not None and entry[1] == said.value:
            continue  # already known, unchanged
        ended = [i for end in found.ends for i in _ended(end, who, known)]
        if found.needs_end and not ended:
            continue  # a change of something never said
        cand = _completed(found, ended, who, known)
        topic = said if cand is found else topic_of(cand.type, cand.payload)
        replaced = list(dict.fromkeys(([entry[0]] if entry else []) + ended))
        first = replaced[0] if replaced else None
        out.append(Extracted(
            type=cand.type, kind=cand.kind, text=cand.text, payload=cand.payload,
            links=_links(cand, known), supersedes=None if corrected else first,
            corrects=first if corrected else None, topic=topic,
            also_replaces=tuple(replaced[1:]),
            reason=cand.reason + (f"; {'corrects' if corrected else 'supersedes'} "
                                  f"{', '.join(replaced)}" if replaced else "")))
    return out


def _ended(end: _End, who: _Subject, known: KnownFacts) -> list[str]:
    """The active memories ``end`` names (see :class:`_End`)."""
    if end.kind == "fact":
        return [nid for pred, nid, value in known.facts_about(who.name)
                if (pred == end.key or (end.key.endswith(":") and pred.startswith(end.key)))
                and (end.value is None or value == end.value)]
    if end.kind == "person":
        return [nid for _, nid, entity in known.related(who.name)
                if _norm(entity) == _norm(end.key)]
    if end.kind == "relation":
        pets = [(nid, entity) for rel in sorted(end.words)
                for _, nid, entity in known.related(who.name, rel)]
        return [pets[0][0]] if len({_norm(e) for _, e in pets}) == 1 else []
    plan = known.plan_matching(end.words, all_words=end.value == "all")
    return [plan] if plan else []


def _completed(cand: _Cand, ended: Sequence[str], who: _Subject, known: KnownFacts) -> _Cand:
    """A rename names the old name; a cancellation takes the goal and deadline of the
    plan it ends."""
    if cand.change == "rename":
        old = [(rel, nid, e) for rel, nid, e in known.related(who.name) if nid in ended]
        if not old or _norm(old[0][2]) == _norm(str(cand.payload["entity"])):
            return cand
        rel, nid, name = old[0]
        kept = {k: v for k, v in known.attributes(nid).items() if k != "formerly"}
        new = str(cand.payload["entity"])
        payload = {**cand.payload, "relationship_type": rel,
                   "attributes": {**kept, **cand.payload["attributes"], "formerly": name}}
        also = f", {_article(kept['kind'])}" if "kind" in kept else ""
        return replace(cand, payload=payload,
                       text=f"{new} is {who.possessive} {rel}{also} (renamed from {name})")
    if cand.change == "cancel":
        plan = known.plan(ended[0])
        if plan is None:
            return cand
        return replace(cand, text=_called_off(plan, who),
                       payload={"goal": plan.goal, "status": TaskStatus.CANCELLED.value,
                                "deadline": plan.deadline})
    return cand


_DUE = re.compile(r"\s*\(due [^)]*\)\s*$")
_AUXILIARIES: Final = frozenset({"is", "are", "will", "was", "has", "would", "had"})


def _called_off(plan: _Plan, who: _Subject) -> str:
    """A cancelled plan in the words of the plan: "The user is going to Kyoto in April"
    → "The user is no longer going to Kyoto in April (cancelled; was due ...)"."""
    text = _DUE.sub("", plan.text)
    due = f"; was due {plan.deadline:%Y-%m-%d %H:%M} UTC" if plan.deadline else ""
    lead = f"{who.display} "
    if text.startswith(lead):
        verb, _, rest = text[len(lead):].partition(" ")
        if verb == "has" and rest.startswith("plans"):
            text = f"{lead}no longer has {rest}"
        elif verb in _AUXILIARIES:
            text = f"{lead}{verb} no longer {rest}"
        else:
            text = f"{lead}no longer {verb} {rest}"
    else:
        text = f"Called off: {text}"
    return f"{text} (cancelled{due})"
