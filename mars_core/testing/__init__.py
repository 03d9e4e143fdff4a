"""Test helpers for mars-memory and for people who extend it: one conformance suite per
storage interface.

A conformance suite is a reusable test class (in the manner of LangChain's standard
tests): subclass it in a ``test_*.py`` file, name the subclass ``Test...``, implement its
one factory method, and pytest runs every ``test_*`` method against your implementation,
through the protocol only.

* :class:`RecordStoreConformance` — a :class:`~mars_core.storage.base.RecordStore` (the
  system of record): implement ``make_records``.
* :class:`VectorIndexConformance` — a :class:`~mars_core.index.base.VectorIndex` (a
  derived, rebuildable index): implement ``make_index``.

And :class:`CountingEmbedder`, an embedder that records how it was called (to check
that many texts arriving at once are embedded in one call).

And the seams a test looks inside a store through (:mod:`mars_core.testing.seams`), so no
test reads the store's private collaborators: :func:`policy_view` (a policy's view of a
namespace), :func:`trigger_view`, :func:`memory_graph`, :func:`namespace_state`,
:func:`cached_states`, :func:`record_store`, :func:`vector_index`, :func:`index_sync`,
:func:`write_summary`, :func:`index_fault` (a fault where a store keeps its index in
step, for crash tests), and :func:`default_parts` (the parts of stores built without
any: how the tests' store matrix runs one suite over every record store and index).

And stores for tests over every kind of record store and index
(:mod:`mars_core.testing.stores`): :func:`kind_parts` makes the stores built inside a
block of one kind of :data:`~mars_core.testing.stores.KINDS` (``ram``, ``sqlite``,
``chroma``, ``chroma-http``, ``qdrant``, ``qdrant-url``, ``postgres``,
``postgres-chroma``), and :class:`StoreFactory` opens stores with a test's defaults and
closes them all.

pytest is a *test* dependency (``pip install 'mars-memory[dev]'``): this module imports it
lazily, inside the tests, so importing ``mars_core.testing`` needs only mars-memory's own
dependencies, and running the suites needs pytest.

Example (in ``tests/test_my_records.py``):
    >>> import pathlib
    >>> from mars_core.storage import SQLiteRecordStore
    >>> from mars_core.testing import RecordStoreConformance
    >>> class TestMyRecords(RecordStoreConformance):
    ...     durable = True
    ...     def make_records(self, path: pathlib.Path) -> SQLiteRecordStore:
    ...         return SQLiteRecordStore(path / "mars.sqlite3")
    >>> "test_failed_write_rolls_back_everything" in dir(TestMyRecords)
    True
"""

from __future__ import annotations

from mars_core.testing.fakes import CountingEmbedder, CountingRecords
from mars_core.testing.index import VectorIndexConformance
from mars_core.testing.records import RecordStoreConformance
from mars_core.testing.seams import (
    INDEX_STEPS,
    cached_states,
    centroid_of,
    default_parts,
    index_fault,
    index_sync,
    memory_graph,
    namespace_state,
    novelty_centroid,
    policy_view,
    record_store,
    semantic_classifier,
    trigger_view,
    vector_index,
    write_summary,
)
from mars_core.testing.stores import KINDS, StoreFactory, kind_parts

__all__ = ["INDEX_STEPS", "KINDS", "CountingEmbedder", "CountingRecords",
           "RecordStoreConformance", "StoreFactory", "VectorIndexConformance", "cached_states",
           "centroid_of", "default_parts", "index_fault", "index_sync", "kind_parts",
           "memory_graph", "namespace_state", "novelty_centroid", "policy_view", "record_store",
           "semantic_classifier", "trigger_view", "vector_index", "write_summary"]
