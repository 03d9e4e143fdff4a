"""Surface detectors of sensitive content: identifiers, secrets, entities, categories.

:func:`detect` finds spans of personal or secret data in a text and returns them as
:class:`Detection` value objects that hold a kind, offsets and a confidence, **never the
matched text**: a detection can be logged, audited or shown in a repr without leaking what
it found. Everything here is deterministic, offline and model-free (seed 000 §4.3 (i)-(iii),
§5.4): regular expressions validated by checksums, word-boundary category lexicons, and the
named entities that :mod:`mars_core.nlp` already extracts (a trained spaCy pipeline when one
is installed, the rules backend otherwise).

**Why not presidio-analyzer.** Microsoft's presidio-analyzer (MIT, inspected at 2.2.366) is
the best-kept open library for this, and its recognizers were the model for the patterns
below. It is not a dependency, not even an optional one, because:

* ``AnalyzerEngine()`` loads spaCy's ``en_core_web_lg`` and, when it is missing, calls
  ``spacy.cli.download`` — offline that raises ``ConnectionError`` (checked here), and the
  package makes spaCy a hard requirement (plus click, pyyaml, a ``preshed<3.0.14`` pin,
  tldextract and phonenumbers: ~50 MB installed);
* its e-mail recognizer validates domains with tldextract, which fetches the Public Suffix
  List over the network on first use and logs a traceback before falling back;
* its IBAN recognizer logs the candidate text on a validation error
  (``logger.error("Failed to validate text %s", ...)``), which our rule "never raw
  sensitive text in logs" forbids;
* the recognizers we need are pure patterns plus checksums, which are small to own.

What was taken from it (``presidio_analyzer/predefined_recognizers/``): the Luhn check and
the IIN-prefix idea of ``generic/credit_card_recognizer.py``; mod-97 from
``generic/iban_recognizer.py`` (where presidio also matches a per-country BBAN regex, we
check the SWIFT IBAN registry's length per country); the IPv4/IPv6 patterns with
``ipaddress`` validation (``generic/ip_recognizer.py``); the SSN invalid ranges, the
mixed-delimiter rejection and the published placeholder numbers
(``country_specific/us/us_ssn_recognizer.py``); the NINO prefix rules
(``country_specific/uk/uk_nino_recognizer.py``); context words that must precede weak
patterns. Phone numbers use hand-written international, North-American and trunk-prefix
("0...") formats instead of libphonenumber, with guards against dates, years and prices.
Secret prefixes follow the public token formats of their issuers (OpenAI ``sk-``, GitHub
``ghp_``/``github_pat_``, AWS ``AKIA``, Google ``AIza``, Slack ``xox?-``, Stripe, GitLab,
npm, Hugging Face), as catalogued by secret scanners such as gitleaks.

Detections from other engines (presidio included) can be mapped to :class:`Kind` by the
caller and passed to the scorer and to redaction through their ``detections=`` argument.

Known limits: the lexicons are English and ignore negation ("I don't have diabetes" still
counts as health); a phone number without separators is found only with a trunk "0", a
"+" or a cue such as "call me" (or, for an Indian mobile, the 5 + 5 grouping); a number
named as an order, ticket, booking or similar reference ("order 555-123-4567") is not a
phone number, whatever its shape; an address needs a house number and a street-type word (or
a continental "Hauptstraße 5" form); anything shaped like a UK postcode ("PS5 3DS") is one.

Examples:
    >>> from mars_core.nlp import Analyzer
    >>> text = "Mail ana@example.com or call +44 20 7946 0958."
    >>> [d.kind.value for d in detect(text, Analyzer("rules", sentiment="lexicon"))]
    ['email', 'phone']
    >>> detect("card 4111 1111 1111 1111", kinds={Kind.CARD})
    [Detection(kind='card', start=5, end=24, score=1.0)]
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING

from mars_core.errors import ValidationError
from mars_core.privacy.checksums import (
    IBAN_LENGTHS,
    iban_valid,
    luhn_valid,
    shannon_entropy,
    ssn_valid,
)

if TYPE_CHECKING:
    from mars_core.nlp import Analyzer, TextSignals

__all__ = [
    "CATEGORY_KINDS",
    "DEFAULT_WEIGHTS",
    "ENTITY_KINDS",
    "IDENTIFIER_KINDS",
    "PATTERN_KINDS",
    "Detection",
    "Kind",
    "detect",
    "entity_detections",
    "resolve_overlaps",
]


class Kind(StrEnum):
    """What a detection is; the value names the mask (``[EMAIL]``, ``[CARD]``...)."""

    SECRET = "secret"
    CARD = "card"
    IBAN = "iban"
    NATIONAL_ID = "national_id"
    EMAIL = "email"
    PHONE = "phone"
    ADDRESS = "address"
    BIRTHDATE = "birthdate"
    IP = "ip"
    HEALTH = "health"
    PROTECTED = "protected"
    FINANCE = "finance"
    PERSON = "person"
    LOCATION = "location"
    ORG = "org"
    NAME = "name"
    DATE = "date"
    PRIVATE = "private"


IDENTIFIER_KINDS: frozenset[Kind] = frozenset(
    {Kind.SECRET, Kind.CARD, Kind.IBAN, Kind.NATIONAL_ID}
)
"""Hard identifiers and credentials: the sensitivity floor applies to them."""

PATTERN_KINDS: frozenset[Kind] = IDENTIFIER_KINDS | {
    Kind.EMAIL, Kind.PHONE, Kind.ADDRESS, Kind.BIRTHDATE, Kind.IP,
}
"""Kinds found by regular expressions (and checksums)."""

CATEGORY_KINDS: frozenset[Kind] = frozenset({Kind.HEALTH, Kind.PROTECTED, Kind.FINANCE})
"""Special-category kinds found by word-boundary lexicons (and NER's NORP label)."""

ENTITY_KINDS: frozenset[Kind] = frozenset(
    {Kind.PERSON, Kind.LOCATION, Kind.ORG, Kind.NAME, Kind.DATE}
)
"""Quasi-identifier kinds found by named-entity recognition."""

_UNASKED_KINDS: frozenset[Kind] = frozenset(Kind) - {Kind.PRIVATE}
"""What :func:`detect` looks for when no kinds are given (built once: it runs per memory)."""

DEFAULT_WEIGHTS: Mapping[Kind, float] = MappingProxyType({
    Kind.SECRET: 1.0,
    Kind.CARD: 0.95,
    Kind.IBAN: 0.95,
    Kind.NATIONAL_ID: 0.95,
    Kind.HEALTH: 0.8,
    Kind.PROTECTED: 0.8,
    Kind.EMAIL: 0.7,
    Kind.PHONE: 0.7,
    Kind.ADDRESS: 0.7,
    Kind.BIRTHDATE: 0.6,
    Kind.IP: 0.5,
    Kind.FINANCE: 0.5,
    Kind.PERSON: 0.3,
    Kind.LOCATION: 0.15,
    Kind.NAME: 0.15,
    Kind.ORG: 0.1,
    Kind.DATE: 0.05,
    Kind.PRIVATE: 0.9,
})
"""Risk of each kind in [0, 1]: a detection's risk is ``weight[kind] * score``.

Credentials are the worst (1.0); identifiers that name one account or person come next
(0.95); GDPR art. 9 special categories (health, protected attributes) 0.8; direct contact
details 0.7; a birth date 0.6; IP addresses and finance words 0.5; named people 0.3; other
quasi-identifiers (places, bare names, organisations, dates) 0.05-0.15 so that a turn
naming a person, a place and a date stays below 0.5 on its own. ``PRIVATE`` marks spans a
user or a high-sensitivity memory declared private (0.9).
"""


@dataclass(frozen=True, slots=True)
class Detection:
    """One sensitive span: kind, character offsets ``[start, end)`` and confidence.

    The matched text is deliberately not stored: take it from the source text with
    :meth:`surface` where it is needed, so a detection can be logged or audited.

    Attributes:
        kind: what was found.
        start: offset of the first character.
        end: offset one past the last character (``end > start``).
        score: detector confidence in [0, 1] (1.0 when a checksum validated it).

    Examples:
        >>> d = Detection(Kind.EMAIL, 5, 20, 1.0)
        >>> d, d.surface("Mail ana@example.com now")
        (Detection(kind='email', start=5, end=20, score=1.0), 'ana@example.com')
    """

    kind: Kind
    start: int
    end: int
    score: float

    def __post_init__(self) -> None:
        raw: object = self.kind
        if not isinstance(raw, Kind):
            object.__setattr__(self, "kind", Kind(str(raw)))
        if not 0 <= self.start < self.end:
            raise ValidationError("a detection needs 0 <= start < end")
        if not (math.isfinite(self.score) and 0.0 <= self.score <= 1.0):
            raise ValidationError("a detection's score must lie in [0, 1]")

    def __repr__(self) -> str:
        return (f"Detection(kind={self.kind.value!r}, start={self.start}, end={self.end}, "
                f"score={self.score})")

    @property
    def length(self) -> int:
        """Number of characters covered."""
        return self.end - self.start

    def surface(self, text: str) -> str:
        """The covered characters of ``text`` (the text the detection was made on)."""
        return text[self.start:self.end]

    def overlaps(self, other: Detection) -> bool:
        """Whether the two spans share at least one character."""
        return self.start < other.end and other.start < self.end


# ------------------------------------------------------------------------ helpers

_DATE_LIKE = re.compile(
    r"\b\d{1,2}[./-]\d{1,2}[./-]\d{2,4}\b|\b(?:19|20)\d{2}[./-]\d{1,2}[./-]\d{1,2}\b"
)


def _digits(s: str) -> str:
    return "".join(c for c in s if c.isdigit())


def _before(text: str, start: int, width: int) -> str:
    return text[max(0, start - width):start]


def _has_context(pattern: re.Pattern[str], text: str, start: int, width: int = 40) -> bool:
    return pattern.search(_before(text, start, width)) is not None


def _separators(s: str) -> set[str]:
    return {c for c in s if not c.isalnum()}


# ---------------------------------------------------------------------------- e-mail

_EMAIL = re.compile(
    r"(?<![\w.!#$%&'*+/=?^`{|}~@-])[\w!#$%&'*+/=?^`{|}~-]+(?:\.[\w!#$%&'*+/=?^`{|}~-]+)*"
    r"@(?:[^\W_](?:[\w-]{0,61}[^\W_])?\.)+(?P<tld>[^\W\d_]{2,63}|xn--[\w-]{2,59})(?![\w-])"
)
_FILE_SUFFIXES = frozenset(
    "png jpg jpeg gif svg webp bmp ico tif tiff css js ts py txt pdf md json".split()
)


def _find_email(text: str) -> Iterator[Detection]:
    for m in _EMAIL.finditer(text):
        if m.group("tld").lower() not in _FILE_SUFFIXES:
            yield Detection(Kind.EMAIL, m.start(), m.end(), 1.0)


# ----------------------------------------------------------------------------- phone

_PHONE_INTL = re.compile(
    r"(?<![\w+(])(?<!\d[ .-])(?:\((?=\+)|\((?=00))?(?:\+|00)[1-9](?:[ .()-]{0,2}\d){6,14}(?!\d)"
)
_PHONE_NANP = re.compile(
    r"(?<![\w+.-])(?<!\d[ .-])(?:\+?1[ .-]?)?"
    r"(?:\((?P<a1>[2-9]\d{2})\) ?|(?P<a2>[2-9]\d{2})(?P<s1>[ .-]))"
    r"\d{3}(?P<s2>[ .-])\d{4}(?![\w-]|[.,]\d)"
)
_PHONE_TRUNK = re.compile(
    r"(?<![\w+.,/-])(?<!\d[ .-])0[1-9]\d{0,3}(?P<sep>[ .-])\d{2,8}(?:(?P=sep)\d{2,8}){0,4}"
    r"(?![\w-]|[.,/]\d)"
    r"|(?<![\w+.,/-])0[1-9]\d{8,9}(?![\w-]|[.,/]\d)"
)
# India: a ten-digit mobile (6-9 first) written 5 + 5, with or without the trunk 0
_PHONE_IN = re.compile(r"(?<![\w+.,/-])(?<!\d[ .-])0?[6-9]\d{4}[ -]\d{5}(?![\w-]|[.,/]\d)")
# Brazil: the two-digit area code in parentheses, then 8 or 9 digits split by a dash
_PHONE_BR = re.compile(r"(?<![\w+])\(\d{2}\) ?9?\d{4}-\d{4}(?![\w-]|[.,]\d)")
_PHONE_LOCAL = re.compile(r"(?<![\w+.-])(?<!\d[ .-])\d{3}[ .-]?\d{4}(?![\w-]|[.,]\d)")
_PHONE_CONTEXT = re.compile(
    r"(?i)\b(?:phone|tel|telephone|mobile|cell(?:phone)?|call(?: me)?|ring me|text me|sms"
    r"|whats ?app|fax|reach me|contact me)\b[^\n]{0,25}$"
)
_REFERENCE_CONTEXT = re.compile(
    r"(?i)\b(?:order|invoice|ticket|ref|reference|booking|reservation|tracking|case|part"
    r"|model|sku|serial|confirmation|isbn|receipt|transaction|policy|claim)\b"
    r"(?:\s*(?:no\.?|number|num|#|id|code))?\s*[:#]?\s*$"
)


def _phone_ok(candidate: str, low: int, high: int) -> bool:
    n = len(_digits(candidate))
    if not low <= n <= high:
        return False
    # a date inside a number with a country code ("+33.1.23.45.67") is the number's grouping
    return candidate.lstrip("(").startswith("+") or not _DATE_LIKE.search(candidate)


def _reference(text: str, start: int) -> bool:
    """Whether the number is named as an order, ticket, booking... number ("order
    555-123-4567"): those are not phone numbers, whatever their shape."""
    return _REFERENCE_CONTEXT.search(_before(text, start, 30)) is not None


def _find_phone(text: str) -> Iterator[Detection]:
    for m in _PHONE_INTL.finditer(text):
        if _phone_ok(m.group(), 8, 15):
            yield Detection(Kind.PHONE, m.start(), m.end(), 0.95)
    for m in _PHONE_NANP.finditer(text):
        if (m.group("s1") is None or m.group("s1") == m.group("s2")) and \
                not _reference(text, m.start()):
            yield Detection(Kind.PHONE, m.start(), m.end(), 0.85)
    for m in _PHONE_TRUNK.finditer(text):
        if _phone_ok(m.group(), 9, 11) and not _reference(text, m.start()):
            yield Detection(Kind.PHONE, m.start(), m.end(), 0.75)
    for pattern, score in ((_PHONE_IN, 0.75), (_PHONE_BR, 0.85)):
        for m in pattern.finditer(text):
            if not _reference(text, m.start()):
                yield Detection(Kind.PHONE, m.start(), m.end(), score)
    for m in _PHONE_LOCAL.finditer(text):
        if _has_context(_PHONE_CONTEXT, text, m.start(), 40) and _phone_ok(m.group(), 7, 7):
            yield Detection(Kind.PHONE, m.start(), m.end(), 0.7)


# ------------------------------------------------------------------------------ card

_DIGIT_RUN = re.compile(r"(?<![\w.,/-])\d+(?:[ -]\d+)*(?![\w])")
_GROUP = re.compile(r"\d+")


def _card_prefix_ok(digits: str) -> bool:
    first = digits[0]
    if first in "46":
        return True
    if first == "5":
        return True  # Mastercard 51-55, Maestro 50 and 56-59
    if first == "3":
        return digits[1] in "0456789"
    if first == "2":
        head = int(digits[:4])
        return 2200 <= head <= 2204 or 2221 <= head <= 2720
    return False


def _card_candidate(digits: str, seps: set[str]) -> bool:
    return (13 <= len(digits) <= 19 and len(seps) <= 1 and len(set(digits)) > 1
            and _card_prefix_ok(digits) and luhn_valid(digits))


def _find_card(text: str) -> Iterator[Detection]:
    for run in _DIGIT_RUN.finditer(text):
        groups = [(g.start() + run.start(), g.end() + run.start())
                  for g in _GROUP.finditer(run.group())]
        i = 0
        while i < len(groups):
            found = None
            total = 0
            for j in range(i, len(groups)):
                g_start, g_end = groups[j]
                size = g_end - g_start
                if len(groups) > 1 and j > i and not 3 <= size <= 6:
                    break
                total += size
                if total > 19:
                    break
                span = text[groups[i][0]:g_end]
                if _card_candidate(_digits(span), _separators(span)):
                    found = (groups[i][0], g_end, j)
            if found is not None:
                yield Detection(Kind.CARD, found[0], found[1], 1.0)
                i = found[2] + 1
            else:
                i += 1


# ------------------------------------------------------------------------------ IBAN

_IBAN_START = re.compile(r"(?<![A-Za-z0-9])([A-Z]{2})\d{2}")


def _find_iban(text: str) -> Iterator[Detection]:
    n = len(text)
    for m in _IBAN_START.finditer(text):
        length = IBAN_LENGTHS.get(m.group(1))
        if length is None:
            continue
        i, count, end = m.start(), 0, m.start()
        while i < n and count < length:
            c = text[i]
            if c.isascii() and c.isalnum():
                count, end, i = count + 1, i + 1, i + 1
            elif c in " -" and count >= 4 and i + 1 < n and text[i + 1].isalnum():
                i += 1
            else:
                break
        complete = count == length and not (end < n and text[end].isalnum())
        if complete and iban_valid(text[m.start():end]):
            yield Detection(Kind.IBAN, m.start(), end, 1.0)


# ----------------------------------------------------------------------- national ids

_SSN = re.compile(r"(?<![\w.-])\d{3}(?P<sep>[- ])\d{2}(?P=sep)\d{4}(?![\w-]|[.,]\d)")
_SSN_BARE = re.compile(r"(?<![\w.-])\d{3}[.]?\d{2}[.]?\d{4}(?![\w-]|[.,]\d)")
_SSN_CONTEXT = re.compile(r"(?i)\b(?:ssn|social security|ss ?#|ss no)\b[^\n]{0,25}$")
_NINO = re.compile(
    r"(?<![A-Za-z0-9])(?!BG|GB|NK|KN|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
    r" ?\d{2} ?\d{2} ?\d{2} ?[A-D](?![A-Za-z0-9])"
)
_ID_CONTEXT = re.compile(
    r"(?i)\b(?:passport|national (?:id|identity|insurance)|id (?:card|number|no\.?)|identity"
    r" (?:card|number)|identification number|driver'?s? licen[cs]e|licen[cs]e (?:number|no\.?)"
    r"|tax (?:id|number|file number|code)|tin|social insurance|personal (?:id|number|code)"
    r"|personnummer|nhs number|medicare|medicaid|aadhaa?r|member(?:ship)? (?:id|number)"
    r"|patient (?:id|number)|account (?:number|no\.?|#)|acct|routing number|sort code"
    r"|policy number)\b"
)
_ID_VALUE = re.compile(r"(?<![\w-])[A-Z]{0,3}\d[\d -]{4,22}\d[A-Z]?(?![\w-]|[.,]\d)")


def _find_national_id(text: str) -> Iterator[Detection]:
    for m in _SSN.finditer(text):
        if ssn_valid(m.group()):
            ctx = _has_context(_SSN_CONTEXT, text, m.start())
            yield Detection(Kind.NATIONAL_ID, m.start(), m.end(), 1.0 if ctx else 0.9)
    for m in _SSN_BARE.finditer(text):
        if ssn_valid(m.group()) and _has_context(_SSN_CONTEXT, text, m.start()):
            yield Detection(Kind.NATIONAL_ID, m.start(), m.end(), 0.9)
    for m in _NINO.finditer(text):
        yield Detection(Kind.NATIONAL_ID, m.start(), m.end(), 0.9)
    for cue in _ID_CONTEXT.finditer(text):
        window_end = min(len(text), cue.end() + 30)
        value = _ID_VALUE.search(text, cue.end(), window_end)
        if value is None or "\n" in text[cue.end():value.start()]:
            continue
        digits = _digits(value.group())
        if 6 <= len(digits) <= 20 and not _DATE_LIKE.search(value.group()):
            yield Detection(Kind.NATIONAL_ID, value.start(), value.end(), 0.9)


# -------------------------------------------------------------------------------- IP

_IPV4 = re.compile(
    r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
    r"(?:/(?:3[0-2]|[12]?\d))?(?![\w]|\.\d)"
)
_IPV6 = re.compile(
    r"(?<![\w:.])(?:(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}|(?:[0-9A-Fa-f]{1,4}:){1,7}:"
    r"|(?:[0-9A-Fa-f]{1,4}:){1,6}:[0-9A-Fa-f]{1,4}|(?:[0-9A-Fa-f]{1,4}:){1,5}(?::[0-9A-Fa-f]{1,4}){1,2}"
    r"|(?:[0-9A-Fa-f]{1,4}:){1,4}(?::[0-9A-Fa-f]{1,4}){1,3}|(?:[0-9A-Fa-f]{1,4}:){1,3}(?::[0-9A-Fa-f]{1,4}){1,4}"
    r"|(?:[0-9A-Fa-f]{1,4}:){1,2}(?::[0-9A-Fa-f]{1,4}){1,5}|[0-9A-Fa-f]{1,4}:(?::[0-9A-Fa-f]{1,4}){1,6}"
    r"|:(?::[0-9A-Fa-f]{1,4}){1,7})(?:/(?:12[0-8]|1[01]\d|[1-9]?\d))?(?![\w:]|\.\d)"
)
_VERSION_BEFORE = re.compile(r"(?i)(?:\bv|\bversion\s*|\brelease\s*|\bver\.?\s*)$")
_IP_CONTEXT = re.compile(r"(?i)\b(?:ip|ipv4|address|server|host|ping|dns|gateway|subnet|router)\b")


def _find_ip(text: str) -> Iterator[Detection]:
    for m in _IPV4.finditer(text):
        if _VERSION_BEFORE.search(_before(text, m.start(), 12)):
            continue
        octets = [int(o) for o in m.group().split("/")[0].split(".")]
        if max(octets) < 10 and not _has_context(_IP_CONTEXT, text, m.start(), 30):
            continue
        yield Detection(Kind.IP, m.start(), m.end(), 0.9)
    for m in _IPV6.finditer(text):
        raw = m.group().split("/")[0]
        if sum(1 for part in raw.split(":") if part) < 3:
            continue
        try:
            ipaddress.IPv6Address(raw)
        except ValueError:
            continue
        yield Detection(Kind.IP, m.start(), m.end(), 0.9)


# --------------------------------------------------------------------------- address

_CAP = r"[A-ZÀ-ÖØ-Þ][\w'’.-]*"
_EN_TYPES = (
    r"Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Square"
    r"|Sq|Terrace|Way|Close|Crescent|Highway|Hwy|Parkway|Pkwy|Circle|Row|Mews|Gardens|Grove"
    r"|Walk|Alley|Trail"
)
_ADDRESS_PATTERNS: tuple[tuple[re.Pattern[str], float], ...] = (
    # English: "221B Baker Street", "1600 Pennsylvania Ave NW"
    (re.compile(rf"(?<![\w.,-])\d{{1,5}}[A-Za-z]?(?:[-/]\d{{1,4}})?,?\s+(?:{_CAP}\s+){{1,4}}"
                rf"(?:{_EN_TYPES})\b\.?"), 0.8),
    # English after an address cue, any case: "I live at 12 baker street"
    (re.compile(r"(?i)\b(?:live at|lives at|lived at|address is|address:|moved to"
                r"|located at|staying at|deliver to|send it to) (?P<addr>\d{1,5}[a-z]?,?\s+"
                r"(?:[a-z'-]+\s+){1,3}(?:street|st|road|rd|avenue|ave|lane|drive|way|boulevard"
                r"|court|place)\b)"), 0.8),
    # French: "12 rue de la Paix", "3 bis avenue Victor Hugo"
    (re.compile(r"(?<![\w.,-])\d{1,4}(?:\s?(?:bis|ter))?,?\s+(?i:rue|avenue|boulevard|bd|allée"
                r"|impasse|chemin|quai|cours|place)\s+(?:(?:de|du|des|la|le|les)\s+|[dl]['’])"
                r"{0,2}[A-ZÀ-Þ][\w'’-]+(?:\s+[A-ZÀ-Þ][\w'’-]+){0,3}"), 0.8),
    # German / Dutch / Swiss: "Hauptstraße 5", "Kerkstraat 12a", "Berliner Straße 12"
    (re.compile(r"(?<![\w])[A-ZÄÖÜ][a-zäöüß]+(?:-[A-ZÄÖÜ]?[a-zäöüß]+)*(?:straße|strasse|str\."
                r"|gasse|weg|allee|platz|laan|straat|gracht|plein|kade|steeg|singel|dreef)"
                r"\s+\d{1,4}(?:\s?[a-z])?(?![\w])"), 0.8),
    (re.compile(r"(?<![\w])[A-ZÄÖÜ][a-zäöüß]+(?:er)?\s+(?:Straße|Strasse|Str\.|Weg|Allee|Platz"
                r"|Gasse)\s+\d{1,4}(?:\s?[a-z])?(?![\w])"), 0.8),
    # Spanish / Italian / Portuguese: "Calle Mayor 5", "Via Roma 10", "Rua Augusta, 274"
    (re.compile(r"(?<![\w])(?:Calle|C/|Avenida|Avda\.|Plaza|Paseo|Carrer|Via|Viale|Piazza"
                r"|Corso|Rua|Travessa)\s+(?:(?:de|del|dei|della|delle|di|do|da|dos|das|la)\s+)*"
                r"[A-ZÀ-Þ][\w'’-]+(?:\s+(?:(?:de|del|della|di|do|da|la)\s+)?[A-ZÀ-Þ][\w'’-]+)"
                r"{0,3},?\s+(?:n[º°o]\.?\s*)?\d{1,4}(?![\w]|\s+(?:times|days|hours|years|minutes))"),
     0.8),
    # number first, Iberian/Italian street word: "12 Rua Augusta", "5 Calle Mayor"
    (re.compile(r"(?<![\w.,-])\d{1,4}[A-Za-z]?,?\s+(?:Rua|Avenida|Travessa|Largo|Praça|Calle"
                r"|Plaza|Paseo|Carrer|Via|Viale|Piazza|Corso)\s+(?:(?:de|del|da|do|dos|das|di|della"
                r"|la)\s+)*[A-ZÀ-Þ][\w'’-]+(?:\s+[A-ZÀ-Þ][\w'’-]+){0,3}"), 0.8),
    # P.O. boxes
    (re.compile(r"(?i)\bP\.?\s?O\.?\s?Box\s+\d{1,6}\b"), 0.8),
    # UK postcodes: "SW1A 1AA"
    (re.compile(r"(?<![\w])[A-PR-UWYZ][A-HK-Y]?\d[A-Z\d]?\s?\d[ABD-HJLNP-UW-Z]{2}(?![\w])"), 0.6),
)


def _find_address(text: str) -> Iterator[Detection]:
    for pattern, score in _ADDRESS_PATTERNS:
        group = "addr" if "addr" in pattern.groupindex else 0
        for m in pattern.finditer(text):
            yield Detection(Kind.ADDRESS, m.start(group), m.end(group), score)


# ------------------------------------------------------------------------- birthdate

_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
          r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_BIRTHDATE = re.compile(
    r"(?i)\b(?:born(?: on| in)?|date of birth|d\.?o\.?b\.?|birth ?date|birthday is)\s*[:-]?\s*"
    rf"(?P<date>\d{{1,2}}[./-]\d{{1,2}}[./-]\d{{2,4}}|(?:19|20)\d{{2}}-\d{{2}}-\d{{2}}"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?(?: of)? {_MONTH},? (?:19|20)\d{{2}}"
    rf"|{_MONTH} \d{{1,2}}(?:st|nd|rd|th)?,? (?:19|20)\d{{2}})\b"
)


def _find_birthdate(text: str) -> Iterator[Detection]:
    for m in _BIRTHDATE.finditer(text):
        yield Detection(Kind.BIRTHDATE, m.start("date"), m.end("date"), 0.9)


# --------------------------------------------------------------------------- secrets

_SECRET_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"-----BEGIN[A-Z ]{0,20}PRIVATE KEY(?: BLOCK)?-----[A-Za-z0-9+/=\s:,.-]*?"
               r"(?:-----END[A-Z ]{0,20}PRIVATE KEY(?: BLOCK)?-----|(?=[^A-Za-z0-9+/=\s:,.-])|\Z)"),
    re.compile(r"(?<![\w-])sk-(?:proj-|svcacct-|admin-|ant-(?:api|admin)\d\d-)?[A-Za-z0-9_-]{20,}"),
    re.compile(r"(?<![\w])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"),
    re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    re.compile(r"(?<![\w-])AIza[0-9A-Za-z_-]{35}(?![\w-])"),
    re.compile(r"(?<![\w-])xox[abprs]-[A-Za-z0-9-]{10,}"),
    re.compile(r"(?<![\w])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    re.compile(r"(?<![\w-])(?:glpat-[A-Za-z0-9_-]{20,}|npm_[A-Za-z0-9]{36}|hf_[A-Za-z0-9]{30,})"),
    re.compile(r"(?<![\w])SG\.[\w-]{22}\.[\w-]{43}"),
    re.compile(r"(?<![\w-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
)
_URL_CREDENTIALS = re.compile(r"(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]{1,64}:(?P<v>[^\s@/]{1,128})@")
_SECRET_KEYS = (r"pass(?:word|wd|code|phrase)|pwd|pin(?: code| number)?|secret(?: key)?"
                r"|api[ _-]?key|apikey|access[ _-]?token|auth[ _-]?token|token|client[ _-]?secret"
                r"|private[ _-]?key")
_ASSIGNMENT = re.compile(
    rf"(?i)\b(?:{_SECRET_KEYS})\b[\"']?\s*(?P<op>:=|=>|[:=]|\bis\b|\bwas\b)\s*"
    r"(?P<v>\"[^\"\n]{3,}\"|'[^'\n]{3,}'|[^\s\"',;]{3,})"
)
_BEARER = re.compile(r"(?i)\bbearer\s+(?P<v>[A-Za-z0-9._~+/-]{16,}=*)")
_PLACEHOLDER_VALUES = frozenset(
    "none null true false required optional hidden redacted example placeholder empty "
    "unknown yes no n/a <redacted> changeit".split()
)
_TOKEN = re.compile(r"(?<![\w+/=.@-])[A-Za-z0-9+/_=-]{20,}(?![\w+/=.@-])")
_URL = re.compile(r"(?i)\b(?:https?|ftp)://\S+|\bwww\.\S+")
_CHUNK = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+|[^A-Za-z0-9]+")


def _password_like(value: str) -> bool:
    body = value.rstrip(".,!?;:)")
    if len(body) < 3 or body.lower() in _PLACEHOLDER_VALUES or set(body) <= set("*x.•#"):
        return False
    return (any(c.isdigit() for c in body) or any(not c.isalnum() for c in body)
            or any(c.isupper() for c in body[1:]))


def _high_entropy(token: str) -> bool:
    if not (any(c.islower() for c in token) and any(c.isupper() for c in token)
            and any(c.isdigit() for c in token)):
        return False
    chunks = _CHUNK.findall(token)
    if len(token) / len(chunks) >= 3.0:
        return False  # camelCase words, paths, identifiers: long regular chunks
    return shannon_entropy(token) >= 0.8 * math.log2(min(len(token), 64))


_LONG_RUN = re.compile(r"\S{15}")
"""What every token pattern needs (a key block aside: its ``-----BEGIN``): 15 characters
without a space — the shortest, ``xoxb-`` and 10 more. Most turns have none."""


def _find_secret(text: str) -> Iterator[Detection]:
    tokens = "-----BEGIN" in text or _LONG_RUN.search(text) is not None
    for pattern in _SECRET_PATTERNS if tokens else ():
        for m in pattern.finditer(text):
            yield Detection(Kind.SECRET, m.start(), m.end(), 1.0)
    for m in _URL_CREDENTIALS.finditer(text):
        yield Detection(Kind.SECRET, m.start("v"), m.end("v"), 1.0)
    for m in _ASSIGNMENT.finditer(text):
        value = m.group("v")
        quoted = value[0] in "\"'"
        code_like = m.group("op") == "=" and text[m.start("op") - 1] != " "
        if quoted or code_like or _password_like(value):
            start = m.start("v")
            end = m.end("v") - (len(value) - len(value.rstrip(".,!?;:)")) if not quoted else 0)
            if end > start and (quoted or value.rstrip(".,!?;:)").lower()
                                not in _PLACEHOLDER_VALUES):
                yield Detection(Kind.SECRET, start, end, 0.95)
    if not tokens:
        return  # a bearer token, a high-entropy token: 16 and 20 characters at least
    for m in _BEARER.finditer(text):
        yield Detection(Kind.SECRET, m.start("v"), m.end("v"), 0.95)
    urls = [(u.start(), u.end()) for u in _URL.finditer(text)]
    for m in _TOKEN.finditer(text):
        inside_url = any(a <= m.start() < b for a, b in urls)
        if not inside_url and _high_entropy(m.group()):
            yield Detection(Kind.SECRET, m.start(), m.end(), 0.7)


# -------------------------------------------------------------------------- lexicons

_LEXICONS: dict[Kind, dict[str, tuple[str, ...]]] = {
    Kind.HEALTH: {
        "strong": (
            r"diagnos(?:is|es|ed)", r"cancer", r"tumou?rs?", r"leuka?emia", r"lymphoma",
            r"chemo(?:therapy)?", r"radiotherapy", r"diabet(?:es|ic)", r"asthma(?:tic)?",
            r"epilep(?:sy|tic)", r"seizures?", r"hiv", r"hepatitis", r"tuberculosis",
            r"dementia", r"alzheimer'?s", r"parkinson'?s", r"multiple sclerosis",
            r"heart (?:attack|disease|condition)", r"high blood pressure", r"hypertension",
            r"arthritis", r"lupus", r"crohn'?s", r"c[o]?eliac", r"depression", r"depressive",
            r"anxiety (?:disorder|attacks?)", r"panic attacks?", r"bipolar", r"schizophreni[ac]",
            r"adhd", r"autism", r"autistic", r"ptsd", r"ocd", r"eating disorders?",
            r"anorexi[ac]", r"bulimi[ac]", r"self[- ]harm(?:ing)?", r"suicid(?:e|al)",
            r"mental (?:illness|breakdown)", r"psychiatri(?:st|c)", r"psychologist",
            r"psychotherapy", r"therap(?:y|ist|ists|ies)", r"rehab(?:ilitation)?",
            r"addict(?:ion|ed)", r"alcoholi(?:sm|c)", r"overdosed?", r"sobriety",
            r"medications?", r"meds", r"prescriptions?", r"prescribed", r"antidepressants?",
            r"insulin", r"metformin", r"sertraline", r"fluoxetine", r"prozac", r"zoloft",
            r"xanax", r"lexapro", r"adderall", r"ritalin", r"methadone", r"opioids?",
            r"dialysis", r"transplant", r"surgery", r"pregnan(?:t|cy)", r"miscarriage",
            r"abortion", r"ivf", r"infertil(?:e|ity)", r"fertility treatment", r"stds?",
            r"stis?", r"sexually transmitted", r"terminal(?:ly)? ill", r"hospitali[sz]ed",
            r"chronic (?:pain|illness|fatigue)", r"migraines?", r"physiotherapy",
            r"hormone (?:therapy|replacement)", r"gender[- ]affirming (?:care|surgery)",
            r"long covid", r"covid[- ]positive",
        ),
        "weak": (
            r"hospital", r"surgeon", r"mental health", r"symptoms?", r"disorder", r"syndrome",
            r"illness",
            r"allerg(?:y|ies|ic)", r"injur(?:y|ies|ed)", r"sick leave", r"blood test",
            r"mri", r"ct scan", r"x-rays?", r"vaccinated", r"antibiotics", r"cholesterol",
            r"counsell?ing", r"counsell?or", r"broken (?:arm|leg|wrist|ankle|rib|bone)",
            r"concussion", r"doctor'?s appointment",
        ),
        "case": (r"AIDS",),
    },
    Kind.FINANCE: {
        "strong": (
            r"salar(?:y|ies)", r"paychecks?", r"pay ?slips?", r"mortgages?", r"debts?",
            r"loans?", r"overdrafts?", r"bankrupt(?:cy)?", r"foreclosure", r"credit score",
            r"credit report", r"credit card debt", r"bank (?:account|balance|statement|transfer"
            r"|details|loan)s?", r"account balance", r"savings account", r"checking account",
            r"net worth", r"tax returns?", r"income tax", r"pension", r"401\(?k\)?",
            r"behind on (?:rent|payments|bills)", r"evict(?:ed|ion)", r"payday loans?",
            r"collection agency", r"garnish(?:ed|ment)", r"alimony", r"child support",
            r"food stamps", r"welfare", r"stock portfolio",
        ),
        "weak": (
            r"income", r"wages?", r"unemploy(?:ed|ment)", r"investments?", r"inheritance",
            r"wire transfer", r"retirement (?:fund|savings)", r"taxes", r"bitcoin",
            r"cryptocurrenc(?:y|ies)",
        ),
        "case": (r"IRS",),
    },
    Kind.PROTECTED: {
        "strong": (
            # religion and belief
            r"religion", r"religious", r"christians?", r"christianity", r"catholic(?:s|ism)?",
            r"protestants?", r"evangelicals?", r"mormons?", r"muslims?", r"islam(?:ic)?",
            r"jewish", r"judaism", r"jews", r"hindus?", r"hinduism", r"buddhis(?:t|ts|m)",
            r"sikhs?", r"atheists?", r"atheism", r"agnostic",
            # racial or ethnic origin, migration status
            r"ethnicity", r"ethnic", r"racial", r"african[- ]americans?", r"hispanics?",
            r"latin[oax]s?", r"asian[- ]americans?", r"caucasian", r"indigenous",
            r"native americans?", r"aboriginal", r"first nations", r"undocumented",
            # sexual orientation, sex life, gender identity
            r"gay", r"lesbians?", r"bisexual", r"homosexual", r"queer", r"lgbt(?:q(?:ia)?)?\+?",
            r"transgender", r"trans (?:woman|women|man|men|person|people|kids?|youth)",
            r"non-?binary", r"genderqueer", r"genderfluid", r"asexual", r"pansexual",
            r"intersex", r"sexual orientation", r"gender identity", r"gender transition",
            r"attracted to (?:men|women|boys|girls|guys|the same sex|both sexes)",
            r"sex life", r"sexual (?:health|partners?|history)",
            # political opinions and trade-union membership
            r"political (?:views|party|affiliation|beliefs|opinions)", r"democrats?",
            r"republicans?", r"labour party", r"conservative party", r"tor(?:y|ies)",
            r"socialists?", r"communists?", r"marxists?", r"libertarians?", r"voted for",
            r"trade unions?", r"labou?r unions?", r"union (?:member|membership|rep"
            r"|representative|dues|organi[sz]er)s?", r"unioni[sz](?:e|ed|ing|ation)",
            r"shop steward",
            # disability
            r"disabilit(?:y|ies)", r"disabled", r"wheelchair", r"hearing[- ]impaired",
            r"visually[- ]impaired", r"amputee", r"paraly[sz]ed", r"special needs",
            # criminal records (GDPR art. 10), genetic and biometric data
            r"criminal record", r"convicted", r"felon(?:y|ies|s)?", r"arrested",
            r"incarcerated", r"probation", r"parole", r"sex offender", r"genetic test(?:ing)?",
            r"dna test", r"biometric",
        ),
        "weak": (
            r"church", r"mosque", r"synagogue", r"pray(?:ed|ing|ers?)?", r"bible", r"quran",
            r"koran", r"torah", r"ramadan", r"immigrants?", r"refugees?", r"asylum",
            r"came out", r"coming out", r"transitioning", r"pride (?:parade|month|march|event"
            r"|flag)s?", r"drag queens?", r"activists?", r"protests?", r"vote for", r"blind",
            r"deaf", r"dyslexi[ac]", r"prison", r"jail",
        ),
        "case": (r"MAGA",),
    },
}
_TIER_SCORE = {"strong": 1.0, "weak": 0.5, "case": 1.0}


def _compile_lexicon(fragments: Iterable[str], flags: int) -> re.Pattern[str]:
    ordered = sorted(fragments, key=lambda f: (-len(f), f))
    return re.compile(r"(?<!\w)(?:" + "|".join(ordered) + r")(?!\w)", flags)


_LEXICON_PATTERNS: tuple[tuple[Kind, re.Pattern[str], float], ...] = tuple(
    (kind, _compile_lexicon(frags, 0 if tier == "case" else re.IGNORECASE), _TIER_SCORE[tier])
    for kind, tiers in _LEXICONS.items()
    for tier, frags in tiers.items()
)


_PATTERNS_OF: Mapping[Kind, tuple[tuple[re.Pattern[str], float], ...]] = MappingProxyType({
    kind: tuple((p, s) for k, p, s in _LEXICON_PATTERNS if k is kind) for kind in CATEGORY_KINDS
})


def _find_category(text: str, kind: Kind) -> Iterator[Detection]:
    for pattern, score in _PATTERNS_OF[kind]:
        for m in pattern.finditer(text):
            yield Detection(kind, m.start(), m.end(), score)


# -------------------------------------------------------------------------- entities

_ENTITY_LABELS: Mapping[str, tuple[Kind, float]] = MappingProxyType({
    "PERSON": (Kind.PERSON, 1.0),
    "PER": (Kind.PERSON, 1.0),
    "GPE": (Kind.LOCATION, 1.0),
    "LOC": (Kind.LOCATION, 1.0),
    "FAC": (Kind.LOCATION, 1.0),
    "ORG": (Kind.ORG, 1.0),
    "NORP": (Kind.PROTECTED, 0.25),
    "DATE": (Kind.DATE, 1.0),
    "TIME": (Kind.DATE, 0.5),
    "NAME": (Kind.NAME, 1.0),
})
"""NER labels (spaCy's OntoNotes set, and the rules backend's NAME/DATE) -> (kind, score).

NORP (nationalities, religious or political groups) counts as a protected attribute at a
quarter confidence (risk 0.2): small pipelines give it to first names and interjections
("Maria", "Congrats" in LoCoMo), and the protected lexicon catches the clear cases at full
confidence. Numbers, money, quantities, works of art and the like are not personal.
"""

_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "`": "'"})


def entity_detections(text: str, entities: Iterable[tuple[str, str]]) -> list[Detection]:
    """Locate ``(surface, label)`` entities (``TextSignals.entities``) in ``text``.

    Entities arrive in text order without offsets; each is searched from the end of the
    previous one (then from the start), apostrophes normalised as the NLP backends do.
    Unknown labels and surfaces that cannot be found are skipped.

    Examples:
        >>> entity_detections("Ana met Bo in Rome", [("Ana", "PERSON"), ("Rome", "GPE")])
        ... # doctest: +NORMALIZE_WHITESPACE
        [Detection(kind='person', start=0, end=3, score=1.0),
         Detection(kind='location', start=14, end=18, score=1.0)]
    """
    haystack = text.translate(_APOSTROPHES)
    out: list[Detection] = []
    cursor = 0
    for surface, label in entities:
        mapped = _ENTITY_LABELS.get(label)
        needle = surface.translate(_APOSTROPHES)
        if mapped is None or not needle.strip():
            continue
        at = haystack.find(needle, cursor)
        if at < 0:
            at = haystack.find(needle)
        if at < 0:
            continue
        cursor = at + len(needle)
        out.append(Detection(mapped[0], at, at + len(needle), mapped[1]))
    return out


# ----------------------------------------------------------------------- orchestrate

_PATTERN_FINDERS: tuple[tuple[Kind, Callable[[str], Iterator[Detection]]], ...] = (
    (Kind.SECRET, _find_secret),
    (Kind.CARD, _find_card),
    (Kind.IBAN, _find_iban),
    (Kind.NATIONAL_ID, _find_national_id),
    (Kind.EMAIL, _find_email),
    (Kind.PHONE, _find_phone),
    (Kind.ADDRESS, _find_address),
    (Kind.BIRTHDATE, _find_birthdate),
    (Kind.IP, _find_ip),
)


_A_DIGIT = re.compile(r"\d")
_NEED_A_DIGIT: frozenset[Kind] = frozenset({
    Kind.CARD, Kind.IBAN, Kind.NATIONAL_ID, Kind.PHONE, Kind.ADDRESS, Kind.BIRTHDATE,
})
"""Kinds whose every pattern needs a digit (``\\d`` or an ASCII digit): most turns of a
conversation have none, so their scans are skipped (the detections are the same)."""


def _skipped(text: str) -> frozenset[Kind]:
    """The pattern kinds that cannot match ``text``: no digit, no ``@`` for an e-mail."""
    skip = frozenset() if _A_DIGIT.search(text) else _NEED_A_DIGIT
    return skip if "@" in text else skip | {Kind.EMAIL}


def resolve_overlaps(
    detections: Iterable[Detection], weights: Mapping[Kind, float] | None = None
) -> list[Detection]:
    """Keep a non-overlapping subset, highest risk first, and sort it by position.

    Risk is ``weights[kind] * score`` (default :data:`DEFAULT_WEIGHTS`); ties go to the
    longer span, then the earlier one, then the kind's name, so the result is unique.

    Examples:
        >>> a, b = Detection(Kind.PERSON, 0, 20, 1.0), Detection(Kind.EMAIL, 6, 20, 1.0)
        >>> resolve_overlaps([a, b])
        [Detection(kind='email', start=6, end=20, score=1.0)]
    """
    w = DEFAULT_WEIGHTS if weights is None else weights

    def rank(d: Detection) -> tuple[float, int, int, str]:
        return (-w.get(d.kind, 0.0) * d.score, -d.length, d.start, d.kind.value)

    kept: list[Detection] = []
    for d in sorted(set(detections), key=rank):
        if not any(d.overlaps(k) for k in kept):
            kept.append(d)
    return sorted(kept, key=lambda d: (d.start, d.end, d.kind.value))


def detect(
    text: str,
    analyzer: Analyzer | None = None,
    *,
    signals: TextSignals | None = None,
    kinds: Collection[Kind] | None = None,
    weights: Mapping[Kind, float] | None = None,
) -> list[Detection]:
    """Find sensitive spans in ``text``: sorted, non-overlapping, deterministic.

    Args:
        text: the text to scan.
        analyzer: the NLP analyzer whose entities are used (default
            :func:`mars_core.nlp.default_analyzer`: spaCy with a trained pipeline when
            installed, the rules backend otherwise). Only consulted when an entity kind
            is asked for and ``signals`` is not given.
        signals: signals already computed for ``text`` (``MemoryStore.observe`` has them);
            their entities are used and nothing is parsed again.
        kinds: the kinds to look for (default: all but ``PRIVATE``).
        weights: kind weights that decide which detection wins an overlap
            (default :data:`DEFAULT_WEIGHTS`).

    Returns:
        Detections sorted by position; where two overlap, the one of higher risk
        (``weight * score``) is kept.

    Raises:
        ValidationError: ``text`` is not a string.

    Examples:
        >>> detect("my password is hunter2!", kinds={Kind.SECRET})
        [Detection(kind='secret', start=15, end=22, score=0.95)]
    """
    if not isinstance(text, str):
        raise ValidationError(f"text must be a str, not {type(text).__name__}")
    wanted = _UNASKED_KINDS if kinds is None else frozenset(kinds)
    found: list[Detection] = []
    skip = _skipped(text)
    for kind, finder in _PATTERN_FINDERS:
        if kind in wanted and kind not in skip:
            found.extend(finder(text))
    for kind in CATEGORY_KINDS & wanted:
        found.extend(_find_category(text, kind))
    if wanted & ENTITY_KINDS and text.strip():
        if signals is None:
            if analyzer is None:
                from mars_core.nlp import default_analyzer

                analyzer = default_analyzer()
            signals = analyzer.analyze(text)
        found.extend(d for d in entity_detections(text, signals.entities) if d.kind in wanted)
    return resolve_overlaps(found, weights)
