"""The candidates and the rules for facts, identity, possessions, likings and people."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal

from mars_core.knowledge.extract.lexicon import (
    _ADV,
    _ALT,
    _ATTR_RE,
    _BREEDS,
    _DIETS,
    _I,
    _IM,
    _IS_A_BAD_HEADS,
    _MOD_RE,
    _NAME,
    _NON_NAMES,
    _NOT_JOBS,
    _NP_STOP,
    _OBJECT_BAD_WORDS,
    _POSSESSIONS,
    _REL_RE,
    _RELATIONS,
    _TO_VERBS_BAD,
    _WE,
    _rx,
)
from mars_core.knowledge.extract.phrases import (
    _blocked,
    _clause,
    _clean_object,
    _proper,
    _strip_article,
    _Subject,
    _take,
    _third_person,
)
from mars_core.knowledge.extract.topics import _names_in
from mars_core.model import MemoryType

__all__: list[str] = []

# --- candidates ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _End:
    """An active memory a candidate makes outdated although its topic differs.

    ``fact``: the subject's fact on predicate ``key`` (a ``key`` ending in ":" is a
    prefix) whose value is ``value`` (any value for ``None``); ``person``: the social
    memory about the subject's <someone> named ``key``; ``relation``: the subject's only
    ``key`` (their only dog); ``plan``: the pending task sharing most of ``words``.
    """

    kind: Literal["fact", "person", "relation", "plan"]
    key: str = ""
    value: str | None = None
    words: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class _Cand:
    pos: int
    type: MemoryType
    kind: str
    text: str
    payload: Mapping[str, Any]
    reason: str
    names: frozenset[str] = frozenset()
    related: tuple[str, ...] = ()  # people the new memory is friendOf
    requires: frozenset[str] = frozenset()  # names whose social memories a task requires
    ends: tuple[_End, ...] = ()  # what it makes outdated besides its own topic
    needs_end: bool = False  # kept only when one of ``ends`` is found
    change: Literal["", "rename", "cancel"] = ""  # completed from what it ends


@dataclass(frozen=True, slots=True)
class _Ctx:
    who: _Subject
    anchor: datetime | None


_Rule = Callable[[str, _Ctx], list[_Cand]]


def _fact(pos: int, ctx: _Ctx, pred: str, obj: str, *, text: str, reason: str,
          kind: str = "fact", confidence: float = 0.9, generality: float = 0.5) -> _Cand:
    return _Cand(pos, MemoryType.SEMANTIC, kind, _third_person(text, ctx.who),
                 {"concept": ctx.who.name, "relations": ((pred, obj),),
                  "confidence": confidence, "generality": generality},
                 reason, names=_names_in(obj))


_PLACE_RULES: Final = (
    (_rx(rf"{_WE}\s+{_ADV}(?:live|(?:have\s+|'ve\s+)?(?:moved|relocated))\s+(?:in|to)\s+"),
     "livesIn", "lives in"),
    (_rx(rf"{_WE}(?:'m|'re|\s+am|\s+are)\s+{_ADV}(?:living|based|settled)\s+in\s+"),
     "livesIn", "lives in"),
    (_rx(rf"{_IM}\s+(?:originally\s+)?from\s+"), "isFrom", "is from"),
)
_CHILDHOOD = _rx(r"\b(?:when\s+(?:I|we)\s+(?:was|were)\s+(?:an?\s+)?(?:kids?|child|children|little|"
                 r"young|small|teenagers?|teens?|babies|baby|\d+)|as\s+(?:an?\s+)?(?:kids?|child|"
                 r"children|teenagers?|teens?|baby)|growing\s+up)\b")


def _rule_place(s: str, ctx: _Ctx) -> list[_Cand]:
    """``I/we live in|moved to|relocated to <Place>``, ``I'm/we're living|based|settled
    in <Place>`` (not a childhood move: "when I was a kid"), ``I'm from <Place>``."""
    out = []
    for rx, pred, verb in _PLACE_RULES:
        for m in rx.finditer(s):
            place = _proper(s[m.end():])
            if not place or _blocked(s, m.start()) or (
                    pred == "livesIn" and _CHILDHOOD.search(_clause(s[m.end():]))):
                continue
            out.append(_fact(m.start(), ctx, pred, place, text=f"{ctx.who.display} {verb} "
                             f"{place}", reason=f"first-person fact '{m.group(0).strip()}'"))
    return out


_WORK = _rx(rf"{_I}\s+{_ADV}(?:work|'m\s+working|am\s+working)\s+(at|for|as)\s+")


def _rule_work(s: str, ctx: _Ctx) -> list[_Cand]:
    out = []
    for m in _WORK.finditer(s):
        prep, tail = m.group(1).casefold(), s[m.end():]
        if _blocked(s, m.start()):
            continue
        if prep == "as":
            phrase = _take(tail, 4) if re.match(r"(?i)an?\s", tail) else None
            job = _clean_object(_strip_article(phrase)) if phrase else None
            if job and phrase:
                out += _job(m.start(), ctx, job, tail[len(phrase):], "work as")
            continue
        org = _proper(tail) or _take(tail, 4) if re.match(r"(?i)(?:an?|the)\s", tail) \
            else _proper(tail)
        org = _clean_object(org, allow_article=True)
        if org:
            out.append(_fact(m.start(), ctx, "worksAt", org,
                             text=f"{ctx.who.display} works {prep} {org}",
                             reason=f"first-person fact 'work {prep}'"))
    return out


def _article(noun: str) -> str:
    return f"{'an' if noun[:1].casefold() in 'aeiou' else 'a'} {noun}"


_AT_ORG = re.compile(r"^\s*(?i:at|for|with)\s+")
_BY_ORG = re.compile(r"^\s*(?i:at|for|with|by|from)\s+")


def _employer(rest: str, preps: re.Pattern[str] = _AT_ORG) -> str | None:
    """``at|for|with <Org>`` opening ``rest``: the organisation, if it is a name."""
    m = preps.match(rest)
    return _proper(rest[m.end():]) if m else None


def _job(pos: int, ctx: _Ctx, job: str, rest: str, cue: str) -> list[_Cand]:
    """``worksAs <job>``, and ``worksAt <Org>`` when ``rest`` opens with "at <Org>"."""
    out = [_fact(pos, ctx, "worksAs", job, text=f"{ctx.who.display} works as {_article(job)}",
                 reason=f"first-person fact '{cue}'")]
    org = _employer(rest)
    if org:
        out.append(_fact(pos, ctx, "worksAt", org, text=f"{ctx.who.display} works at {org}",
                         reason=f"first-person fact '{cue} ... at'"))
    return out


_IS_A = _rx(rf"{_IM}\s+{_ADV}(an?)\s+")
_FAN = _rx(rf"{_IM}\s+{_ADV}(?:a\s+)?(?:really\s+|huge\s+|big\s+|great\s+|massive\s+|"
           rf"total\s+|die-?hard\s+)?fan\s+of\s+")
_DIET_RE = _ALT(re.escape(d) for d in _DIETS)
_DIET = _rx(rf"(?:{_IM}|{_I}(?:'ve|\s+have)\s+(?:been|gone|become)|{_I}\s+(?:went|became))\s+"
            rf"{_ADV}(?:fully\s+|completely\s+|strictly\s+|totally\s+|100%\s+)?(?:a\s+)?"
            rf"({_DIET_RE})\b")
_NO_DIET = _rx(rf"{_IM}\s+(?:not\s+(?:a\s+)?({_DIET_RE})\s+(?:anymore|any\s+more)|no\s+longer\s+"
               rf"(?:a\s+)?({_DIET_RE}))\b")
_ALLERGIC = _rx(rf"{_IM}\s+{_ADV}(?:severely\s+|very\s+)?allergic\s+to\s+")


def _rule_identity(s: str, ctx: _Ctx) -> list[_Cand]:
    out = []
    for m in _IS_A.finditer(s):
        tail = s[m.end():]
        noun = _take(tail, 3, _NP_STOP | {"of", "to", "and", "in"})
        after = tail[len(noun):].lstrip() if noun else ""
        if not noun or after.casefold().startswith(("of ", "to ")) or _blocked(
                s, m.start()):
            continue
        words = noun.casefold().split()
        if words[0] in _IS_A_BAD_HEADS or words[-1] in _IS_A_BAD_HEADS or \
                _clean_object(noun) is None or words[-1].endswith(("ly", "ing", "ed")):
            continue
        if words[-1] not in _NOT_JOBS and _employer(after):  # "I'm a nurse at St Mary's"
            out += _job(m.start(), ctx, noun, after, "I am a ... at")
            continue
        out.append(_fact(m.start(), ctx, "isA", noun,
                         text=f"{ctx.who.display} is {_article(noun)}",
                         reason="first-person fact 'I am a'", confidence=0.85))
    for m in _DIET.finditer(s):
        diet = m.group(1).casefold()
        if not _blocked(s, m.start()):
            out.append(_fact(m.start(), ctx, "diet", diet, text=f"{ctx.who.display} is {diet}",
                             reason="dietary constraint", kind="constraint", generality=0.8))
    for m in _NO_DIET.finditer(s):
        diet = (m.group(1) or m.group(2)).casefold()
        if not _blocked(s, m.start()):
            out.append(_fact(m.start(), ctx, "diet", f"no longer {diet}",
                             text=f"{ctx.who.display} is no longer {diet}",
                             reason="dietary change", kind="constraint", generality=0.8))
    for m in _ALLERGIC.finditer(s):
        what = _clean_object(_take(s[m.end():], 4))
        if what:
            out.append(_fact(m.start(), ctx, "allergicTo", what,
                             text=f"{ctx.who.display} is allergic to {what}",
                             reason="allergy constraint", kind="constraint", generality=0.8))
    return out


_HAVE = _rx(rf"{_WE}\s+{_ADV}(?:have|'ve\s+got|have\s+got|(?:'ve\s+|have\s+)?(?:adopted|"
            rf"rescued))\s+(an?|one|two|three|four|five|"
            rf"six|\d)\s+")
_NAMED = re.compile(rf"^\s*,?\s*(?i:named|called)\s+({_NAME})\b")


def _rule_have(s: str, ctx: _Ctx) -> list[_Cand]:
    out = []
    for m in _HAVE.finditer(s):
        tail = s[m.end():]
        noun = _take(tail, 3, _NP_STOP | {"named", "called", "of", "to"})
        if not noun or _blocked(s, m.start()):
            continue
        head = noun.casefold().split()[-1]
        if head not in _POSSESSIONS and head not in _BREEDS:
            continue
        count = m.group(1).casefold()
        obj = noun if count in ("a", "an") else f"{count} {noun}"
        shown = _article(noun) if count in ("a", "an") else obj
        out.append(_fact(m.start(), ctx, "has", obj, text=f"{ctx.who.display} has {shown}",
                         reason="first-person fact 'I have'", confidence=0.85))
        named = _NAMED.match(tail[len(noun):])
        if named and named.group(1).casefold() not in _NON_NAMES:
            kind = _BREEDS.get(head, head)
            breed = {"kind": noun} if noun.casefold() != kind else {}
            also = f", {_article(noun)}" if breed else ""
            out.append(_social(m.start(), ctx, named.group(1), kind, related_to=ctx.who.name,
                               text=f"{named.group(1)} is {ctx.who.possessive} {kind}{also}",
                               reason="'I have a <x> named <Name>'", attributes=breed))
    return out


_MY_ATTR = _rx(rf"(?<![\w'])my\s+({_ATTR_RE})\s+is\s+")
_MY_FAV = _rx(r"(?<![\w'])my\s+(?:all-time\s+|absolute\s+|very\s+)?favou?rite(?:\s+"
              r"([a-z]+(?:\s+[a-z]+)?))?\s+(?:is|has\s+to\s+be|would\s+be)\s+")
_IS_MY_FAV = re.compile(
    r"(?:^|[,;]\s*)((?:[\w'-]+\s+){0,4}[\w'-]+)\s+(?:is|are)\s+(?i:my)\s+"
    r"(?i:(?:all-time\s+|absolute\s+)?favou?rites?)(?:\s+([a-z]+(?:\s+[a-z]+)?))?(?=[\s.!,;]|$)")


def _rule_my(s: str, ctx: _Ctx) -> list[_Cand]:
    out = []
    for m in _MY_ATTR.finditer(s):
        attr = " ".join(m.group(1).casefold().split())
        value = _take(s[m.end():], 6, frozenset({"and", "but", "so", "because", "which"}))
        if value and _clean_object(value, allow_article=True):
            out.append(_fact(m.start(), ctx, f"attr:{attr}", value,
                             text=f"{ctx.who.possessive[:1].upper()}{ctx.who.possessive[1:]} "
                             f"{attr} is {value}", reason=f"first-person attribute 'my {attr}'",
                             confidence=0.85))
    for m in _MY_FAV.finditer(s):
        cat = m.group(1)
        value = _take(s[m.end():], 6, frozenset({"and", "but", "so", "because", "which",
                                                 "since", "as"}))
        if not value or _clean_object(value, allow_article=True) is None:
            continue
        out.append(_pref(m.start(), ctx, cat, _strip_article(value)))
    for m in _IS_MY_FAV.finditer(s):
        value, cat = m.group(1), m.group(2)
        first = value.split()[0].casefold()
        if first in _OBJECT_BAD_WORDS or first in _NON_NAMES or \
                _clean_object(value) is None:
            continue
        out.append(_pref(m.start(), ctx, cat if cat and cat != "part" else None, value))
    return out


def _pref(pos: int, ctx: _Ctx, cat: str | None, value: str) -> _Cand:
    cap = f"{ctx.who.possessive[:1].upper()}{ctx.who.possessive[1:]}"
    if cat:
        cat = " ".join(cat.casefold().split())
        return _fact(pos, ctx, f"favourite:{cat}", value, text=f"{cap} favourite {cat} is {value}",
                     reason="favourite cue", kind="preference", confidence=0.85, generality=0.7)
    return _fact(pos, ctx, "favourite", value, text=f"{cap} favourite is {value}",
                 reason="favourite cue", kind="preference", confidence=0.8, generality=0.7)


_LIKE_VERBS: Final = {
    "like": "likes", "love": "loves", "enjoy": "enjoys", "adore": "adores",
    "prefer": "prefers", "hate": "hates", "dislike": "dislikes", "detest": "detests",
    "can't stand": "hates", "cannot stand": "hates", "don't like": "dislikes",
    "do not like": "dislikes", "don't enjoy": "dislikes", "do not enjoy": "dislikes",
    "don't really like": "dislikes", "really don't like": "dislikes",
}
_LIKE_RE = _ALT(re.escape(v).replace(r"\ ", r"\s+")
                for v in sorted(_LIKE_VERBS, key=len, reverse=True))
_LIKE = _rx(rf"{_I}\s+{_ADV}({_LIKE_RE})\s+")
_PREF_STOP: Final = _NP_STOP - {"more", "most", "really"} | {"over", "to", "than",
                                                                "instead", "rather"}


def _rule_like(s: str, ctx: _Ctx) -> list[_Cand]:
    out = []
    for m in _LIKE.finditer(s):
        verb = _LIKE_VERBS[" ".join(m.group(1).casefold().split())]
        tail = s[m.end():]
        to_verb = re.match(r"(?i)to\s+(?=\w)", tail)
        if to_verb and tail[to_verb.end():].split(maxsplit=1)[0].casefold() in _TO_VERBS_BAD:
            continue
        stop = _PREF_STOP if verb == "prefers" else _NP_STOP
        obj = _take(tail[to_verb.end():] if to_verb else tail, 5, stop,
                    verb_first=to_verb is not None)
        obj = _clean_object(obj)
        if not obj or _blocked(s, m.start()):
            continue
        obj = f"to {obj}" if to_verb else obj
        shown = {"likes": "likes", "loves": "loves", "enjoys": "enjoys", "adores": "adores",
                 "prefers": "prefers", "hates": "hates", "dislikes": "does not like",
                 "detests": "detests"}[verb]
        out.append(_fact(m.start(), ctx, verb, obj, text=f"{ctx.who.display} {shown} {obj}",
                         reason=f"preference cue '{m.group(1).strip()}'", kind="preference",
                         generality=0.7))
    for m in _FAN.finditer(s):
        obj = _clean_object(_take(s[m.end():], 5))
        if obj and not _blocked(s, m.start()):
            out.append(_fact(m.start(), ctx, "likes", obj,
                             text=f"{ctx.who.display} is a fan of {obj}",
                             reason="preference cue 'fan of'", kind="preference",
                             generality=0.7))
    return out


_REL_PHRASE = rf"(?:(?i:{_MOD_RE})[\s-]+)?(?i:{_REL_RE})"
_MY_REL_NAME = re.compile(rf"(?<![\w'])(?i:my)\s+({_REL_PHRASE})(?:\s+|,\s+(?={_NAME},))({_NAME})"
                          rf"\b(?!')")
_NAME_IS_MY = re.compile(rf"\b({_NAME})\s+(?:is|was)\s+(?i:my)\s+({_REL_PHRASE})\b(?!')")
_NAME_MY = re.compile(rf"\b({_NAME}),\s+(?i:my)\s+({_REL_PHRASE})\b(?!')")
_NAMES_REL_NAME = re.compile(rf"\b({_NAME})'s\s+({_REL_PHRASE}),?\s+({_NAME})\b(?!')")
_NAME_IS_NAMES = re.compile(rf"\b({_NAME})\s+is\s+({_NAME})'s\s+({_REL_PHRASE})\b(?!')")
_ATTR_VERBS: Final = {"livesIn": "lives in", "worksAt": "works at", "worksAs": "works as"}
_SOCIAL_ATTR = _rx(r"^\s*(?:,\s*who\s+|\s+)(lives\s+in|works\s+at|works\s+as\s+an?)\s+")


def _social(pos: int, ctx: _Ctx, entity: str, rel: str, *, related_to: str, text: str,
            reason: str, attributes: Mapping[str, str] | None = None) -> _Cand:
    attrs = {"related_to": related_to, **(attributes or {})}
    return _Cand(pos, MemoryType.SOCIAL, "social", text,
                 {"entity": entity, "relationship_type": rel, "attributes": attrs},
                 reason, names=frozenset({entity.casefold()}),
                 related=(related_to,) if related_to != ctx.who.name or not ctx.who.direct
                 else ())


def _ok_name(name: str) -> bool:
    return name.casefold() not in _NON_NAMES and name.casefold() not in _RELATIONS


def _rel(text: str) -> str:
    return " ".join(text.casefold().split())


def _rule_social(s: str, ctx: _Ctx) -> list[_Cand]:
    out = []
    who = ctx.who
    for m in _MY_REL_NAME.finditer(s):
        rel, name = _rel(m.group(1)), m.group(2)
        if not _ok_name(name):
            continue
        attrs = _social_attributes(s[m.end():])
        shown = "".join(f", who {_ATTR_VERBS[k]} {v}" for k, v in attrs.items())
        out.append(_social(m.start(), ctx, name, rel, related_to=who.name,
                           text=f"{name} is {who.possessive} {rel}{shown}",
                           reason=f"'my {rel} <Name>'", attributes=attrs))
    for rx in (_NAME_IS_MY, _NAME_MY):
        for m in rx.finditer(s):
            name, rel = m.group(1), _rel(m.group(2))
            if _ok_name(name):
                out.append(_social(m.start(), ctx, name, rel, related_to=who.name,
                                   text=f"{name} is {who.possessive} {rel}",
                                   reason=f"'<Name> is my {rel}'"))
    for m in _NAMES_REL_NAME.finditer(s):
        owner, rel, name = m.group(1), _rel(m.group(2)), m.group(3)
        if _ok_name(owner) and _ok_name(name):
            out.append(_social(m.start(), ctx, name, rel, related_to=owner,
                               text=f"{name} is {owner}'s {rel}",
                               reason=f"'<Name>'s {rel} <Name>'"))
    for m in _NAME_IS_NAMES.finditer(s):
        name, owner, rel = m.group(1), m.group(2), _rel(m.group(3))
        if _ok_name(owner) and _ok_name(name):
            out.append(_social(m.start(), ctx, name, rel, related_to=owner,
                               text=f"{name} is {owner}'s {rel}",
                               reason=f"'<Name> is <Name>'s {rel}'"))
    return out


def _social_attributes(tail: str) -> dict[str, str]:
    m = _SOCIAL_ATTR.match(tail)
    if m is None:
        return {}
    verb = " ".join(m.group(1).casefold().split())
    rest = tail[m.end():]
    if verb == "lives in":
        value = _proper(rest)
        return {"livesIn": value} if value else {}
    if verb == "works at":
        value = _proper(rest)
        return {"worksAt": value} if value else {}
    job = _clean_object(_take(rest, 3))
    return {"worksAs": job} if job else {}
