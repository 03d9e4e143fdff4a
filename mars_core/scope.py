"""Retrieval scope by jurisdiction (seed 000 §4.3): which memories a request may see.

§4.3: "The retrieve endpoint filters candidates by sensitivity and jurisdiction before
ranking", and "policy templates can be scoped by jurisdiction and department". A memory's
jurisdiction is its provenance's (``Provenance.jurisdiction``: "EU", "US-CA", …, or none).
A request names the jurisdictions it may see; a code covers itself and its subdivisions
("EU" covers "EU-DE", not "EUR"), and the empty code ``""`` covers memories with no
jurisdiction. Codes are compared case-insensitively (stored upper case).

Examples:
    >>> covers(frozenset({"EU"}), "eu-de"), covers(frozenset({"EU"}), "US-CA")
    (True, False)
    >>> covers(frozenset({"EU", ""}), None)
    True
    >>> sorted(narrow(check_jurisdictions(["EU", "US"]), check_jurisdictions("EU-DE")))
    ['EU-DE']
"""

from __future__ import annotations

from mars_core.errors import ValidationError

__all__ = ["MAX_CODE", "check_jurisdictions", "covers", "narrow"]

MAX_CODE = 32
"""Longest jurisdiction code (as ``Provenance.jurisdiction``)."""
_MAX_CODES = 256


def _code(value: object) -> str:
    if not isinstance(value, str) or len(value) > MAX_CODE or any(
            not (c.isalnum() or c in "-_") for c in value.strip()):
        raise ValidationError(f"a jurisdiction is a code such as 'EU' or 'US-CA' (letters, "
                              f"digits, '-', at most {MAX_CODE} characters; '' for memories "
                              "with no jurisdiction)")
    return value.strip().upper()


def check_jurisdictions(value: object) -> frozenset[str] | None:
    """Jurisdiction codes as a request gives them: None (no filter), one code, or an
    iterable of codes, normalised upper case.

    Raises:
        ValidationError: not a code or codes (a number, a code too long, bad characters).
    """
    if value is None:
        return None
    if isinstance(value, str):
        return frozenset({_code(value)})
    if not isinstance(value, list | tuple | set | frozenset):
        raise ValidationError("jurisdiction must be a code such as 'EU', a list of codes, "
                              "or None")
    if len(value) > _MAX_CODES:
        raise ValidationError(f"at most {_MAX_CODES} jurisdiction codes per request")
    return frozenset(_code(v) for v in value)


def _within(code: str, scope: str) -> bool:
    return code == scope or (scope != "" and code.startswith(scope + "-"))


def covers(codes: frozenset[str], jurisdiction: str | None) -> bool:
    """Whether a memory of ``jurisdiction`` is in scope of ``codes``."""
    own = (jurisdiction or "").strip().upper()
    return any(_within(own, c) for c in codes)


def narrow(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    """The codes both scopes allow (None: no filter): a request inside a template keeps
    its own codes the template covers, and the template's codes the request covers."""
    if a is None or b is None:
        return b if a is None else a
    return frozenset({c for c in a if any(_within(c, s) for s in b)}
                     | {c for c in b if any(_within(c, s) for s in a)})
