"""Read-only views of a store for people: the rows of ``mars inspect``, id prefixes.

Nothing here mutates the store or counts as an access. Text is redacted
(:func:`mars_core.privacy.redaction.redact`) and truncated before it leaves.

Examples:
    >>> from mars_core import MemoryStore
    >>> with MemoryStore(budget=200) as store:
    ...     node = store.add("My email is ana@example.com", type="semantic")
    ...     row = inspect_rows(store)[0]
    ...     (row.type, "ana@example.com" in row.text, resolve_id(store, node.id[:8])[1] == node.id)
    ('semantic', False, True)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mars_core.errors import NotFoundError, ValidationError
from mars_core.privacy.redaction import redact
from mars_core.scoring.dmf import effective_score, tier

if TYPE_CHECKING:
    from mars_core.store import MemoryStore

__all__ = ["InspectRow", "inspect_rows", "printable", "resolve_id"]

_NEUTRAL_OMEGA = 0.5
TEXT_CHARS = 60
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e"
                          "\u2060-\u2069\ufeff\ufff9-\ufffb]")
"""What a terminal would act on rather than show: C0 controls but tab and newline (ESC
starts the sequences that recolour, move the cursor, set the title or write a link),
DEL, C1 controls (0x9b is a one-byte CSI), and the invisible format characters that
reorder or hide text (bidirectional overrides and isolates, zero-width ones, line and
paragraph separators)."""
_NEWLINES = re.compile("[\t\n]")


def printable(text: str, *, lines: bool = True) -> str:
    r"""``text`` safe to print on a terminal: every character a terminal would act on
    (:data:`_UNPRINTABLE`) is shown as its escape (``\x1b``, ``\u202e``) instead;
    ``lines=False`` escapes tabs and newlines too (``\t``, ``\n``: a table cell, one
    line of a list).

    Examples:
        >>> print(printable("ok \x1b[31mred\x1b[0m"))
        ok \x1b[31mred\x1b[0m
        >>> print(printable("a\nb", lines=False))
        a\nb
    """
    out = _UNPRINTABLE.sub(_escaped, text)
    return out if lines else _NEWLINES.sub(_escaped, out)


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if char in "\t\n":
        return "\\t" if char == "\t" else "\\n"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


@dataclass(frozen=True)
class InspectRow:
    """One memory as ``mars inspect`` shows it.

    Attributes:
        id: the memory id.
        type: episodic, semantic, social or task.
        tier: DMF tier of ``score`` (healthy, unstable, critical).
        score: DMF ``Ω_eff`` now: write-time Ω decayed over the namespace's interactions
            since the memory was written (seed 004 eq 18).
        sensitivity: in [0, 1].
        weight: tokens.
        access_count: retrievals that returned it.
        status: active or archived.
        text: redacted, truncated content.
    """

    id: str
    type: str
    tier: str
    score: float
    sensitivity: float
    weight: int
    access_count: int
    status: str
    text: str


def inspect_rows(store: MemoryStore, namespace: str | None = None, *,
                 status: str = "active", limit: int | None = None,
                 width: int | None = TEXT_CHARS) -> list[InspectRow]:
    """The newest ``limit`` memories of a namespace, newest first.

    Args:
        store: the store (nothing is written, nothing counts as an access).
        namespace: the namespace (default: the store's default namespace).
        status: ``active`` or ``archived``.
        limit: at most this many rows (default: all).
        width: truncate each redacted text to this many characters (None: whole).

    Raises:
        ValidationError: an unknown status, or a ``width`` below 2.
    """
    if width is not None and width < 2:
        raise ValidationError("width must be at least 2 characters (or None)")
    ns = store.config.default_namespace if namespace is None else namespace
    nodes = store.list(ns, status=status, newest=limit)
    step = int(store.stats(ns)["namespaces"][ns]["step"])
    rows = []
    for node in reversed(nodes):
        omega = float(node.signals.get("omega", _NEUTRAL_OMEGA))
        score = effective_score(omega, max(0, step - node.step))
        text = printable(" ".join(redact(node.content).text.split()), lines=False)
        rows.append(InspectRow(
            node.id, node.type.value, tier(score).value, score, node.sensitivity, node.weight,
            node.access_count, node.status.value,
            text if width is None or len(text) <= width else text[: width - 1] + "…"))
    return rows


def resolve_id(store: MemoryStore, prefix: str,
               namespace: str | None = None) -> tuple[str, str]:
    """The one memory (active or archived) whose id starts with ``prefix``, as
    ``(namespace, id)``: searched in ``namespace``, or in every namespace when None (the
    operator's command line holds the whole store; the library's id calls never cross
    namespaces).

    Raises:
        ValidationError: the prefix is shorter than 4 characters or matches several ids.
        NotFoundError: it matches none.
    """
    prefix = prefix.strip().lower()
    if len(prefix) < 4:
        raise ValidationError(f"id prefix {prefix!r} is too short (give at least 4 characters)")
    names = [namespace] if namespace is not None else store.namespaces()
    matches = [(n.namespace, n.id) for ns in names for n in store.list(ns, status=None)
               if n.id.startswith(prefix)]
    if not matches:
        raise NotFoundError(f"no memory with an id starting {prefix!r}")
    if len(matches) > 1:
        raise ValidationError(f"id prefix {prefix!r} matches {len(matches)} memories")
    return matches[0]
