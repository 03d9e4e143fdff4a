"""Namespaces loaded on demand, a bounded number kept (least recently used dropped).

Opening a store reads its manifest only; a namespace's views
(:class:`~mars_core.views.namespace.NamespaceState`) are read from the record store the
first time a call touches it. At most ``capacity`` stay cached between calls, holding at
most ``max_held`` memories together (:meth:`NamespaceState.held
<mars_core.views.namespace.NamespaceState.held>`: the active ones and what calls read
beyond them); the least recently used ones beyond either bound are dropped when the next
call starts (after their policy state is saved), so a process that serves a few
namespaces of a large store holds only those, and one that serves many holds what the
bound allows however many it has touched (the namespace a call uses is always kept, so a
single namespace larger than the bound stays cached).

A store that is not the only writer of its records (a ``read_only`` reader beside a
writer) checks a cached namespace's version once per public call (:meth:`new_call`) and
reads it again when another process has changed it since. The first touch of a cached
namespace in a call also lets go of what earlier calls read of its history
(:meth:`~mars_core.views.namespace.NamespaceState.trim`).

Examples:
    >>> from mars_core.storage.base import NamespaceRecord
    >>> from mars_core.views.namespace import KEEP_READ, KEEP_READ_STORE, NamespaceState
    >>> from mars_core.policies import make_policy
    >>> cache = NamespaceCache(lambda name: NamespaceState(
    ...     NamespaceRecord(name), [], [], make_policy("lru")), capacity=2)
    >>> [cache.get(n).name for n in ("a", "b", "c")]
    ['a', 'b', 'c']
    >>> cache.new_call(); cache.names()
    ['b', 'c']
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Final

from mars_core.errors import ConfigError
from mars_core.views.namespace import KEEP_READ, KEEP_READ_STORE, NamespaceState

__all__ = ["CACHE_MEMORIES", "NamespaceCache"]

CACHE_MEMORIES: Final = 4096
"""How many memories the namespaces a process keeps loaded hold together between calls,
by default (``cache_memories`` of :class:`~mars_core.store.MemoryStore`). With the
default 8,000-token budget a namespace that serves a question now and then holds about
600 (its ~500 active memories and what its last calls read), so about seven stay loaded;
at about 6 KB of resident memory a memory (the memory, its edges, its vector; measured:
4 MB a namespace of 625 held), about 25 MB. A namespace alone is never dropped for it,
but one agent's loop over a long history keeps up to
:data:`~mars_core.views.namespace.KEEP_READ_STORE` (4,096) of what it reads: beside
other namespaces it goes over the bound and is read again after their calls — a process
that runs such a loop beside others wants ``cache_memories=8192``."""


class NamespaceCache:
    """Loads namespaces when first touched; keeps the ``capacity`` most recently used.

    Args:
        load: reads a namespace's views from the record store.
        capacity: how many namespaces stay cached (at least 1).
        max_held: how many memories the cached namespaces hold together between calls
            (at least 1; the most recently used namespace stays cached whatever it holds).
        on_evict: called with a namespace before it is dropped (saves what it learned).
        version: reads a namespace's committed version; when given, a cached namespace
            is checked against it once per call and read again if it changed.
        on_stale: called with a cached namespace another process changed, before it is
            read again (``on_evict`` is not: what it learned belongs to a state that is
            gone).
    """

    def __init__(self, load: Callable[[str], NamespaceState], *, capacity: int = 256,
                 max_held: int = CACHE_MEMORIES,
                 on_evict: Callable[[NamespaceState], None] | None = None,
                 version: Callable[[str], int] | None = None,
                 on_stale: Callable[[NamespaceState], None] | None = None) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise ConfigError(f"cache_namespaces must be an int >= 1, not {capacity!r}")
        if isinstance(max_held, bool) or not isinstance(max_held, int) or max_held < 1:
            raise ConfigError(f"cache_memories must be an int >= 1, not {max_held!r}")
        self._max_held = max_held
        self._load = load
        self._capacity = capacity
        self._on_evict = on_evict
        self._version = version
        self._on_stale = on_stale
        self._cache: OrderedDict[str, NamespaceState] = OrderedDict()
        self._checked: set[str] = set()

    def new_call(self) -> None:
        """A public call starts: the least recently used namespaces beyond ``capacity``,
        or beyond ``max_held`` memories held together, are dropped (never during a call,
        which may hold their views; the most recently used one stays), and cached ones
        are checked again before use."""
        self._checked.clear()
        held = sum(state.held() for state in self._cache.values())
        while len(self._cache) > self._capacity or (
                len(self._cache) > 1 and held > self._max_held):
            _, state = self._cache.popitem(last=False)
            held -= state.held()
            if self._on_evict is not None:
                self._on_evict(state)

    def get(self, name: str) -> NamespaceState:
        """The views of ``name`` (loaded, or reloaded when another process changed it)."""
        state = self._cache.get(name)
        if state is not None and self._version is not None and name not in self._checked \
                and self._version(name) != state.record.version:
            del self._cache[name]  # another process changed it: read it again
            if self._on_stale is not None:
                self._on_stale(state)
            state = None
        if state is None:
            state = self._load(name)
            self._cache[name] = state
        elif name not in self._checked:
            self._trim(state)  # what earlier calls read beyond its active memories
        self._checked.add(name)
        self._cache.move_to_end(name)
        return state

    def _trim(self, state: NamespaceState) -> None:
        """Trim ``state`` to what the other cached namespaces leave of
        :data:`~mars_core.views.namespace.KEEP_READ_STORE`, and at least
        :data:`~mars_core.views.namespace.KEEP_READ`: one namespace alone keeps the
        store's whole allowance; together, between calls, they keep at most that plus
        ``KEEP_READ`` for each other namespace (each kept ``KEEP_READ`` before)."""
        others = sum(s.kept() for s in self._cache.values() if s is not state)
        state.trim(max(KEEP_READ, KEEP_READ_STORE - others))

    def peek(self, name: str) -> NamespaceState | None:
        """The cached views of ``name``, if any (nothing is loaded)."""
        return self._cache.get(name)

    def resident(self, name: str | None = None) -> dict[str, int]:
        """How many memories the cached views hold at this point of the call, of ``name``
        (0: not cached) or of every cached namespace; nothing is loaded."""
        out: dict[str, int] = {}
        for ns in [name] if name is not None else sorted(self._cache):
            state = self._cache.get(ns)
            if state is not None and ns not in self._checked:
                self._trim(state)
            out[ns] = 0 if state is None else state.held()
        return out

    def drop(self, name: str) -> None:
        """Forget a namespace's views (they are read again when next needed)."""
        self._cache.pop(name, None)
        self._checked.discard(name)

    def names(self) -> list[str]:
        """The cached namespaces, least recently used first."""
        return list(self._cache)

    def states(self) -> list[NamespaceState]:
        """The cached views, least recently used first."""
        return list(self._cache.values())
