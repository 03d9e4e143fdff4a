"""The checks behind the identifier detectors (:mod:`mars_core.privacy.detectors`): the
Luhn digit of a card number, an IBAN's length and mod-97 check, the rules a US social
security number must keep, and the Shannon entropy that tells a secret token from a word.

Examples:
    >>> luhn_valid("4111 1111 1111 1111"), iban_valid("GB82 WEST 1234 5698 7654 32")
    (True, True)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["IBAN_LENGTHS", "iban_valid", "luhn_valid", "shannon_entropy", "ssn_valid"]


def luhn_valid(number: str) -> bool:
    """Luhn (mod 10) check of a digit string, separators ignored.

    Examples:
        >>> luhn_valid("4111 1111 1111 1111"), luhn_valid("4111 1111 1111 1112")
        (True, False)
    """
    digits = [int(c) for c in number if c.isdigit()]
    if len(digits) < 2:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        doubled = d * 2 if i % 2 == 1 else d
        total += doubled - 9 if doubled > 9 else doubled
    return total % 10 == 0


IBAN_LENGTHS: Mapping[str, int] = MappingProxyType({
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22,
    "BH": 22, "BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24,
    "DE": 22, "DJ": 27, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18,
    "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27,
    "GT": 28, "HN": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
    "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20,
    "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20,
    "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24,
    "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24,
    "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25,
    "SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
    "YE": 30,
})
"""IBAN length per country code (SWIFT IBAN registry, ISO 13616)."""


def iban_valid(iban: str) -> bool:
    """ISO 13616 check: known country, its exact length, and ``mod 97 == 1``.

    Spaces and dashes are ignored; letters must be upper case.

    Examples:
        >>> iban_valid("DE89 3704 0044 0532 0130 00"), iban_valid("DE88 3704 0044 0532 0130 00")
        (True, False)
    """
    compact = "".join(c for c in iban if c not in " -")
    if not compact.isascii() or not compact.isalnum() or compact.upper() != compact:
        return False
    if IBAN_LENGTHS.get(compact[:2]) != len(compact) or not compact[2:4].isdigit():
        return False
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


_SSN_PLACEHOLDERS = frozenset({"123456789", "078051120", "219099999"})


def ssn_valid(number: str) -> bool:
    """Whether a 9-digit US SSN could have been issued (separators ignored).

    Rejects area 000, 666 and 900-999, group 00, serial 0000, a single repeated digit,
    and the published placeholders (078-05-1120, 123-45-6789, 219-09-9999,
    987-65-4320..4329).

    Examples:
        >>> ssn_valid("536-22-1234"), ssn_valid("666-22-1234"), ssn_valid("123-45-6789")
        (True, False, False)
    """
    digits = "".join(c for c in number if c.isdigit())
    if len(digits) != 9 or len(set(digits)) == 1:
        return False
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    if area in ("000", "666") or area[0] == "9" or group == "00" or serial == "0000":
        return False
    return digits not in _SSN_PLACEHOLDERS and not digits.startswith("98765432")


def shannon_entropy(token: str) -> float:
    """Shannon entropy of the characters of ``token``, in bits per character.

    Examples:
        >>> shannon_entropy("aaaa"), shannon_entropy("abcd")
        (0.0, 2.0)
    """
    if not token:
        return 0.0
    n = len(token)
    return max(0.0, -sum(c / n * math.log2(c / n) for c in Counter(token).values()))
