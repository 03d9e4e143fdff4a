"""What tests may look at inside a :class:`~mars_core.store.MemoryStore`, in one place.

A store's collaborators (its engine, the namespace views the policies read, the record
store and the vector index it holds, the index's sync state) are private: their shape
changes as the engine does. Tests that need to look at them, or to inject a fault into
them, go through these functions, so a change inside the engine is followed here once
rather than in every test file. Nothing here writes to the store; :func:`index_fault`
injects a fault where a store keeps its index in step (crash tests).

Examples:
    >>> from mars_core import FakeClock, MemoryStore
    >>> from mars_core.testing import memory_graph, policy_view, record_store
    >>> with MemoryStore(budget=100, clock=FakeClock()) as store:
    ...     a = store.add("Ana moved to Lisbon", type="episodic")
    ...     b = store.add("Ana lives in Lisbon", type="semantic",
    ...                   provenance={"derived_from": (a.id,)})
    ...     view = policy_view(store)
    ...     (view.namespace, view.count, view.budget, memory_graph(store).ancestors(b.id) == [a.id],
    ...      record_store(store) is not None)
    ('default', 2, 100, True, True)
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mars_core.engine.indexing import IndexSync
    from mars_core.engine.keyed import KeyedIndex
    from mars_core.graph import MemoryGraph
    from mars_core.index.base import VectorIndex
    from mars_core.model import MemoryNode
    from mars_core.policies.plan import PolicyView, Summary
    from mars_core.privacy.semantic import SemanticSensitivity
    from mars_core.scoring.dmf import CentroidTracker
    from mars_core.storage.base import RecordStore, Vector
    from mars_core.store import MemoryStore
    from mars_core.views.namespace import NamespaceState, NamespaceView

__all__ = ["INDEX_STEPS", "cached_states", "centroid_of", "default_parts", "index_fault",
           "index_sync", "memory_graph", "namespace_state", "novelty_centroid", "policy_view",
           "record_store", "semantic_classifier", "trigger_view", "vector_index",
           "write_summary"]


def namespace_state(store: MemoryStore, namespace: str = "default") -> NamespaceState:
    """The store's loaded state of ``namespace`` (its memories, graph, cards and known
    facts), as the store's own calls see it at this point."""
    return store._engine.ns(namespace)


def memory_graph(store: MemoryStore, namespace: str = "default") -> MemoryGraph:
    """The memory graph of ``namespace`` (typed edges, provenance)."""
    return namespace_state(store, namespace).graph


def policy_view(store: MemoryStore, namespace: str = "default", *, budget: int | None = None,
                rng: random.Random | None = None) -> PolicyView:
    """A policy's view of ``namespace``, as the store builds it for a trigger: the
    namespace's budget (or ``budget``), the store clock's now, ``rng`` (default
    ``random.Random(0)``) and the store's vectors, embedder and token counter."""
    state = namespace_state(store, namespace)
    return state.view(budget if budget is not None else store.config.budget_for(namespace),
                      store.clock.now(),
                      rng if rng is not None else random.Random(0),
                      io=store._engine.io)


def trigger_view(store: MemoryStore, namespace: str = "default") -> NamespaceView:
    """The view the store gives its policy when a write triggers it now: the counters a
    new unit of work would stage (nothing is staged or written), the namespace's budget
    and the generator seeded from the store's seed and counters."""
    return store._engine.view(store._engine.begin(), namespace)


def cached_states(store: MemoryStore) -> list[NamespaceState]:
    """The namespace states the store holds loaded between calls."""
    return list(store._engine.cache.states())


def write_summary(store: MemoryStore, summary: Summary, *, policy: str = "test") -> MemoryNode:
    """Write ``summary`` the way a reflection does: one unit of work through the store's
    staging path (the members archived, the summary ``derivesFrom`` them, audited as
    written by ``policy``)."""
    ns = store.get(summary.member_ids[0]).namespace
    with store._engine.unit() as unit:
        return store._writer.summarise(unit, ns, summary, policy, {})


def novelty_centroid(store: MemoryStore, namespace: str = "default") -> CentroidTracker:
    """The moving centroid a namespace's next memory is compared with (DMF's divergence
    D), primed from its most recent stored vectors when the namespace has none yet."""
    return store._engine.centroid(store._engine.ns(namespace))


def centroid_of(store: MemoryStore, vectors: Iterator[Vector] | list[Vector]
                ) -> CentroidTracker:
    """A centroid primed with ``vectors`` (oldest first), configured as the store's."""
    return store._engine.enricher.tracker(vectors)


def semantic_classifier(store: MemoryStore) -> SemanticSensitivity | None:
    """The store's embedding-level sensitivity classifier, or None when its configuration
    turns it off."""
    return store._engine.io.semantic()


def record_store(store: MemoryStore) -> RecordStore:
    """The store's record store (the system of record)."""
    return store._engine.records


def vector_index(store: MemoryStore) -> KeyedIndex:
    """The vector index the store queries (the engine's keyed wrapper: ``.inner`` is the
    index given to or chosen by the store)."""
    return store._engine.index


def index_sync(store: MemoryStore) -> IndexSync:
    """How the store keeps its index in step with the records (``rebuilt``, ``key``,
    ``ahead``, ``rebuild()``)."""
    return store._engine.sync


_PARTS = (("records", "opening", "_default_records"), ("index", "opening", "_default_index"),
          ("path_records", "opening", "_path_records"), ("path_index", "layout", "open_index"))


@contextlib.contextmanager
def default_parts(*, records: Callable[[], RecordStore] | None = None,
                  index: Callable[[], VectorIndex] | None = None,
                  path_records: Callable[..., RecordStore] | None = None,
                  path_index: Callable[..., tuple[VectorIndex, str]] | None = None
                  ) -> Iterator[None]:
    """Within the block, the stores built without parts take these (a test matrix runs one
    suite over several record stores and indexes this way); the defaults are back after.

    Args:
        records: the records of ``MemoryStore()`` without any (default: SQLite in RAM).
        index: the index of ``MemoryStore()`` without one (default: numpy).
        path_records: the records of ``MemoryStore.open(directory)``, called as
            ``path_records(directory, read_only=..., lock_timeout=..., synchronous=...)``
            (default: SQLite in the directory).
        path_index: the index of ``MemoryStore.open(directory)``, called as
            :func:`mars_core.layout.open_index` is and returning ``(index, note)``.

    Not thread-safe against stores being opened on other threads while it is entered or
    left; a store built inside keeps its parts after the block.
    """
    from mars_core import layout, opening

    modules = {"opening": opening, "layout": layout}
    given: dict[str, Any] = {"records": records, "index": index, "path_records": path_records,
                             "path_index": path_index}
    saved = [(modules[mod], name, getattr(modules[mod], name)) for _, mod, name in _PARTS]
    try:
        for arg, mod, name in _PARTS:
            if given[arg] is not None:
                setattr(modules[mod], name, given[arg])
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


INDEX_STEPS = {"index-write": "_flush_buffer", "index-position": "_record"}
"""The steps of keeping an index in step :func:`index_fault` can fail, and the method of
:class:`~mars_core.engine.indexing.IndexSync` each is."""


@contextlib.contextmanager
def index_fault(step: str, fault: Callable[[], object]) -> Iterator[None]:
    """Within the block, every store calls ``fault()`` instead of doing ``step`` of keeping
    its index in step with the records; the step is back after.

    Args:
        step: ``"index-write"`` (the buffered index writes, after their records
            committed) or ``"index-position"`` (recording the position the index holds,
            after the index writes that got it there returned).
        fault: what happens instead: raise, or end the process (``os._exit``) for a
            kill -9 at exactly that point.

    Raises:
        KeyError: ``step`` is not one of :data:`INDEX_STEPS`.

    Not thread-safe against other threads' stores while it is entered or left.

    Example (the Chroma index on disk writes its entries when the store closes):
        >>> import tempfile
        >>> from mars_core import FakeClock, MemoryStore
        >>> from mars_core.testing import index_fault
        >>> failed = []
        >>> with tempfile.TemporaryDirectory() as path:
        ...     with index_fault("index-write", lambda: failed.append("index-write")):
        ...         with MemoryStore.open(path, index="chroma", clock=FakeClock()) as store:
        ...             _ = store.add("Ana moved to Lisbon")
        ...     with MemoryStore.open(path, index="chroma", clock=FakeClock()) as store:
        ...         hits = store.retrieve("Lisbon", read_only=True)  # caught up on open
        >>> failed, [hit.text for hit in hits]
        (['index-write'], ['Ana moved to Lisbon'])
    """
    from mars_core.engine.indexing import IndexSync

    name = INDEX_STEPS[step]
    saved = getattr(IndexSync, name)

    def instead(self: IndexSync, *args: object, **kwargs: object) -> None:
        fault()

    setattr(IndexSync, name, instead)
    try:
        yield
    finally:
        setattr(IndexSync, name, saved)
