"""The temporal range index of one namespace and status (seed 000 §3.2.5, §5.2).

Seed 000 keeps "a temporal index [that] maps τ_i to an age feature and supports range
queries" (§3.2.5), "a calendar queue for range queries" (§5.2). Here it is the memories
of one namespace and status sorted by creation time (then sequence number), kept
incrementally as memories enter and leave the status: an insert is a binary search and
a list insertion (an append when, as usual, the newest memory is the latest), a window
``since ≤ created_at ≤ until`` two binary searches and a slice. Retrieval with
``since``/``until`` asks it for the window's ids, hands them to the vector index as an
allow-list (``within=``) instead of a metadata range — which Chroma evaluates by scanning
its metadata: 0.43–1.2 s at 100,000 memories against 0.03–0.1 s for the allow-list, see
docs/benchmarks/reproductions.md — and ranks the lexical side inside the window only.

Examples:
    >>> t = Timeline()
    >>> t.add("b", 20.0, 2); t.add("a", 10.0, 1); t.add("c", 30.0, 3)
    >>> t.window(15.0, None), t.window(None, 20.0), len(t)
    (['b', 'c'], ['a', 'b'], 3)
    >>> t.remove("b"); t.window(None, None)
    ['a', 'c']
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable

__all__ = ["Timeline"]


class Timeline:
    """Memory ids sorted by ``(created timestamp, sequence)``.

    Args:
        entries: initial ``(id, timestamp, seq)`` triples, in any order (sorted once).
    """

    def __init__(self, entries: Iterable[tuple[str, float, int]] = ()) -> None:
        ordered = sorted((ts, seq, i) for i, ts, seq in entries)
        self._keys: list[tuple[float, int]] = [(ts, seq) for ts, seq, _ in ordered]
        self._ids: list[str] = [i for _, _, i in ordered]
        self._key: dict[str, tuple[float, int]] = dict(zip(self._ids, self._keys,
                                                           strict=True))

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._key

    def add(self, memory_id: str, timestamp: float, seq: int) -> None:
        """Place a memory (placing it again moves it)."""
        if memory_id in self._key:
            self.remove(memory_id)
        key = (timestamp, seq)
        at = bisect.bisect_right(self._keys, key)
        self._keys.insert(at, key)
        self._ids.insert(at, memory_id)
        self._key[memory_id] = key

    def remove(self, memory_id: str) -> None:
        """Take a memory out (unknown ids are ignored)."""
        key = self._key.pop(memory_id, None)
        if key is None:
            return
        at = bisect.bisect_left(self._keys, key)
        del self._keys[at]
        del self._ids[at]

    def window(self, since: float | None, until: float | None) -> list[str]:
        """Ids created in ``[since, until]`` (either bound ``None``: open), oldest first."""
        lo = 0 if since is None else bisect.bisect_left(self._keys, (since, -math.inf))
        hi = len(self._keys) if until is None else bisect.bisect_right(self._keys,
                                                                      (until, math.inf))
        return self._ids[lo:hi]
