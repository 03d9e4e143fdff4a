"""Dates and times relative to an anchor: :func:`parse_deadline`."""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Final

from mars_core.io.checks import MAX_DATE, MIN_DATE
from mars_core.knowledge.extract.lexicon import _ALT, _MONTHS, _WEEKDAYS, _rx
from mars_core.model import utc
from mars_core.nlp.rules import normalise_apostrophes

__all__ = ["parse_deadline"]

# --- dates and times -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _When:
    phrase: str
    spans: tuple[tuple[int, int], ...]
    deadline: datetime | None
    strict: bool  # clearly ahead ("tomorrow", "next week"), not "today" or "this week"



_WD = _ALT(_WEEKDAYS)
_DOT = r"\.?"
_MONTH_RE = (r"(?:January|February|March|April|May|June|July|August|September|October|"
             r"November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?")
_LEAD = r"(?:(?:on|by|before|until|till|for|this\s+coming|on\s+the)\s+)?"
_NUMBER_WORDS: Final = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4,
                        "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
                        "a couple of": 2, "a few": 3}
_DATE_RULES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("iso", re.compile(r"\b(?:(?:on|by|before|until)\s+)?(\d{4})-(\d{1,2})-(\d{1,2})\b")),
    ("dmy", re.compile(rf"\b{_LEAD}(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_RE})"
                       rf"(?:,?\s+(\d{{4}}))?(?![\w:])")),
    ("mdy", re.compile(rf"\b{_LEAD}({_MONTH_RE})\s+(\d{{1,2}})(?:st|nd|rd|th)?"
                       rf"(?:,?\s+(\d{{4}}))?(?![\w:])")),
    ("after", _rx(r"\b(?:on\s+)?the\s+day\s+after\s+tomorrow(?:\s+(?:morning|afternoon|"
                  r"evening|night))?\b")),
    ("tomorrow", _rx(r"\b(?:by\s+)?tomorrow(?:\s+(?:morning|afternoon|evening|night))?\b")),
    ("today", _rx(r"\b(?:later\s+)?(?:by\s+)?(?:today|tonight|this\s+(?:morning|afternoon|"
                  r"evening))\b")),
    ("in", _rx(r"\bin\s+(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|"
               r"a\s+couple\s+of|a\s+few)\s+(day|week|month)s?\b")),
    ("weekend", _rx(r"\b(?:on\s+|over\s+)?(this|next)\s+weekend\b")),
    ("week", _rx(r"\b(?:by\s+)?(?:the\s+end\s+of\s+)?(this|next)\s+week\b")),
    ("month", _rx(r"\b(?:by\s+)?(?:the\s+end\s+of\s+)?(this|next)\s+month\b")),
    ("year", _rx(r"\b(?:by\s+)?next\s+year\b")),
    ("in_month", re.compile(rf"\b(?:in|by|until|before|(?:at\s+)?the\s+end\s+of)\s+"
                            rf"(?:(?:early|late|mid)[\s-]+)?({_MONTH_RE.removesuffix(_DOT)})"
                            rf"(?:\s+(\d{{4}}))?(?![\w:])(?!\s+\d)")),
    ("weekday", _rx(rf"\b{_LEAD}(?:(this|next)\s+)?(?<!last\s)(?<!past\s)(?<!every\s)"
                    rf"(?<!previous\s)({_WD})(?:\s+(?:morning|afternoon|evening|night))?\b")),
)
_TIME_RULE: Final = _rx(
    r"\b(?:(?:at|by|around|before|until|till|from)\s+)?(?:(\d{1,2})(?::(\d{2}))?\s*"
    r"(am|pm|a\.m\.|p\.m\.)(?![\w])|(\d{1,2}):(\d{2})(?![\w:])|(noon|midday|midnight))")
_END_OF_DAY: Final = time(23, 59)


def _month(name: str) -> int:
    return _MONTHS[name.rstrip(".").casefold()]


def _safe_date(y: int, m: int, d: int) -> date | None:
    try:
        return date(y, m, d)
    except ValueError:
        return None


def _month_day(m: int, d: int, year: str | None, today: date | None) -> date | None:
    if year:
        return _safe_date(int(year), m, d)
    if today is None:
        return None
    found = _safe_date(today.year, m, d)
    if found is not None and found >= today:
        return found
    return _safe_date(today.year + 1, m, d)


def _end_of_month(y: int, m: int) -> date:
    return date(y, m, calendar.monthrange(y, m)[1])


def _relative(kind: str, m: re.Match[str], today: date) -> date | None:
    monday = today - timedelta(days=today.weekday())
    if kind == "after":
        return today + timedelta(days=2)
    if kind == "tomorrow":
        return today + timedelta(days=1)
    if kind == "today":
        return today
    if kind == "in":
        n = _NUMBER_WORDS.get(" ".join(m.group(1).casefold().split())) or int(m.group(1))
        unit = m.group(2).casefold()
        days = n * {"day": 1, "week": 7}.get(unit, 0)
        if unit == "month":
            y, mo = divmod(today.month - 1 + n, 12)
            day = min(today.day, calendar.monthrange(today.year + y, mo + 1)[1])
            return date(today.year + y, mo + 1, day)
        return today + timedelta(days=days)
    if kind in ("weekend", "week"):
        shift = 7 if m.group(1).casefold() == "next" else 0
        return monday + timedelta(days=6 + shift)
    if kind == "month":
        if m.group(1).casefold() == "this":
            return _end_of_month(today.year, today.month)
        y, mo = (today.year + 1, 1) if today.month == 12 else (today.year, today.month + 1)
        return _end_of_month(y, mo)
    if kind == "year":
        return date(today.year + 1, 12, 31)
    if kind == "in_month":  # "in April": by the end of the next April (this one if now)
        month = _month(m.group(1))
        year = today.year if month >= today.month else today.year + 1
        return _end_of_month(year, month)
    return _weekday(m.group(1), m.group(2), today, monday)


def _weekday(which: str | None, name: str, today: date, monday: date) -> date:
    wd = _WEEKDAYS.index(name.casefold())
    mode = (which or "").casefold()
    if mode == "next":
        return monday + timedelta(days=7 + wd)
    if mode == "this" and wd >= today.weekday():
        return monday + timedelta(days=wd)
    return today + timedelta(days=(wd - today.weekday()) % 7 or 7)


def _date_of(kind: str, m: re.Match[str], today: date | None) -> date | None:
    if kind == "iso":
        return _safe_date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    if kind == "in_month" and m.group(2):
        return _end_of_month(int(m.group(2)), _month(m.group(1)))
    if kind == "dmy":
        return _month_day(_month(m.group(2)), int(m.group(1)), m.group(3), today)
    if kind == "mdy":
        return _month_day(_month(m.group(1)), int(m.group(2)), m.group(3), today)
    if today is None:
        return None
    try:
        return _relative(kind, m, today)
    except OverflowError:  # "tomorrow" on 31 December 9999: a day no calendar holds
        return None


def _time_of(m: re.Match[str]) -> time | None:
    if m.group(6):
        return time(12) if m.group(6).casefold() in ("noon", "midday") else time(23, 59)
    if m.group(4):
        h, mi = int(m.group(4)), int(m.group(5))
        return time(h, mi) if h < 24 and mi < 60 else None
    h, mi = int(m.group(1)), int(m.group(2) or 0)
    if not 1 <= h <= 12 or mi >= 60:
        return None
    pm = m.group(3).casefold().startswith("p")
    return time((h % 12) + (12 if pm else 0), mi)


def _find_when(text: str, anchor: datetime | None) -> _When | None:
    """The first future date and the first time expression of ``text``, resolved."""
    local = anchor if anchor is None or anchor.tzinfo is not None else anchor.replace(
        tzinfo=UTC)
    today = local.date() if local is not None else None
    found: tuple[int, str, re.Match[str]] | None = None
    for kind, rx in _DATE_RULES:
        m = rx.search(text)
        if m is not None and (found is None or m.start() < found[0]):
            found = (m.start(), kind, m)
    tm = _TIME_RULE.search(text)
    clock = _time_of(tm) if tm is not None else None
    if found is None and clock is None:
        return None
    spans = tuple(sorted(x.span() for x in (found[2] if found else None, tm) if x))
    phrase = " ".join(text[a:b].strip() for a, b in spans)
    if phrase.split()[0].casefold() not in _MONTHS and phrase.split()[0].casefold() not in \
            _WEEKDAYS:
        phrase = phrase[:1].casefold() + phrase[1:]
    loose = found is not None and (found[1] == "today" or (
        found[1] in ("week", "month") and found[2].group(1).casefold() == "this") or (
        found[1] == "in_month" and today is not None and not found[2].group(2)
        and _month(found[2].group(1)) == today.month))
    day = _date_of(found[1], found[2], today) if found else today
    if day is None:
        return _When(phrase, spans, None, not loose)
    tz = local.tzinfo if local is not None else UTC
    deadline = datetime.combine(day, clock or _END_OF_DAY, tzinfo=tz)
    try:
        if found is None and local is not None and deadline <= local:
            deadline += timedelta(days=1)  # a bare time already past today means tomorrow
        at = utc(deadline)
    except OverflowError:  # past the end of the calendar (or before its start in UTC)
        return _When(phrase, spans, None, not loose)
    # a date no stored memory can keep (io_checks): the plan is kept, without it
    return _When(phrase, spans, at if MIN_DATE <= at < MAX_DATE else None, not loose)


def parse_deadline(text: str, anchor: datetime | None) -> datetime | None:
    """The deadline (aware UTC) of the first date/time expression of ``text``, or ``None``.

    Relative expressions need ``anchor`` (naive anchors are UTC; times are read in the
    anchor's timezone). See the module docstring for what is understood.

    Examples:
        >>> from datetime import datetime, UTC
        >>> now = datetime(2026, 5, 6, 10, 0, tzinfo=UTC)  # a Wednesday
        >>> parse_deadline("on Friday at 5:30pm", now).isoformat()
        '2026-05-08T17:30:00+00:00'
        >>> parse_deadline("next Friday", now).date(), parse_deadline("3 May", now).date()
        (datetime.date(2026, 5, 15), datetime.date(2027, 5, 3))
        >>> parse_deadline("2026-05-03", None).isoformat(), parse_deadline("soon", now)
        ('2026-05-03T23:59:00+00:00', None)
    """
    found = _find_when(normalise_apostrophes(text), anchor)
    return None if found is None else found.deadline
