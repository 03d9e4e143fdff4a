"""The vector index conformance suite: :class:`VectorIndexConformance`."""

from __future__ import annotations

import abc
import contextlib
import math
import pathlib
import random
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import ClassVar

import numpy as np

from mars_core.errors import (
    ConflictError,
    EmbeddingMismatchError,
    StoreClosedError,
    ValidationError,
)
from mars_core.index.base import (
    And,
    Eq,
    Filter,
    In,
    IndexCapabilities,
    MetaValue,
    Not,
    Or,
    Range,
    VectorIndex,
    exact_cosines,
    matches,
)
from mars_core.model import (
    MemoryStatus,
)
from mars_core.storage.base import (
    IndexRow,
)
from mars_core.testing._common import ACTIVE, ARCHIVED, Vector, _raises, _skip, _uid

__all__ = ["VectorIndexConformance"]

# =====================================================================================
# Vector index conformance suite
# =====================================================================================


class _Source:
    """Stands in for the record store: the rows an index reads on demand, and who asked."""

    def __init__(self) -> None:
        self.rows: dict[str, IndexRow] = {}
        self.calls: list[str] = []

    def __call__(self, namespace: str) -> list[IndexRow]:
        self.calls.append(namespace)
        return [r for r in self.rows.values() if r.namespace == namespace]


_CONVERSATIONS = ("c1", "c2", "")
_KINDS = ("semantic", "episodic", "social")
_LEVELS = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0)


def _random_fields(rng: random.Random) -> dict[str, MetaValue]:
    """Fields with one type per key; some keys missing on purpose."""
    fields: dict[str, MetaValue] = {}
    if rng.random() < 0.8:
        fields["type"] = rng.choice(_KINDS)
    if rng.random() < 0.8:
        fields["conversation"] = rng.choice(_CONVERSATIONS)
    if rng.random() < 0.8:
        fields["sensitivity"] = rng.choice(_LEVELS) if rng.random() < 0.5 \
            else round(rng.random(), 2)
    if rng.random() < 0.7:
        fields["count"] = rng.randint(0, 5)
    if rng.random() < 0.7:
        fields["pinned"] = rng.random() < 0.5
    return fields


def _random_leaf(rng: random.Random) -> Filter:
    choice = rng.randrange(9)
    if choice == 0:
        return Eq("conversation", rng.choice((*_CONVERSATIONS, "c-missing")))
    if choice == 1:
        return In("type", tuple(rng.sample((*_KINDS, "unknown"), rng.randint(1, 3))))
    if choice == 2:
        return Eq("pinned", rng.choice((True, False, 1, 0)))  # Python: True == 1
    if choice == 3:
        return In("count", tuple(rng.sample(range(7), rng.randint(1, 3))))
    if choice == 4:
        return Eq("count", float(rng.randint(0, 5)))  # Python: 2 == 2.0
    if choice == 5:
        return In("sensitivity", tuple(rng.sample(_LEVELS, rng.randint(1, 3))))
    lo = round(rng.random() * 0.6, 2)
    if choice == 6:
        return Range("sensitivity", gte=lo, lt=lo + 0.3)
    if choice == 7:
        return Range("count", gt=rng.choice((-1, 0.5, 1.5, 2)), lte=rng.choice((2, 3.5, 6)))
    return Range(rng.choice(("count", "sensitivity", "type")))  # "holds a number"


def _random_filter(rng: random.Random, depth: int = 0) -> Filter:
    if depth >= 2 or rng.random() < 0.45:
        return _random_leaf(rng)
    kind = rng.randrange(3)
    if kind == 2:
        return Not(_random_filter(rng, depth + 1))
    clauses = tuple(_random_filter(rng, depth + 1) for _ in range(rng.randint(2, 3)))
    return And(clauses) if kind == 0 else Or(clauses)


_HANDWRITTEN_FILTERS: tuple[Filter, ...] = (
    Eq("conversation", "c1"),
    Eq("conversation", ""),
    Eq("pinned", True),
    Eq("count", 3),
    Eq("sensitivity", 0.25),
    In("type", ("semantic", "social")),
    Range("sensitivity", gt=0.25),
    Range("sensitivity", gte=0.5),
    Range("count", lt=2),
    Range("count", lte=2),
    Range("count", gte=1.5),
    Range("sensitivity", gte=0.2, lte=0.6),
    And((Eq("conversation", "c2"), Eq("type", "episodic"))),
    Or((Eq("conversation", "c1"), Range("count", gte=4))),
    Not(Eq("conversation", "c1")),
    Not(Eq("pinned", True)),  # also matches entries without "pinned"
    Not(Range("count", gte=2)),  # ... and entries without a number under "count"
    And((Eq("conversation", "c1"), Not(In("type", ("semantic",))))),
    Or((And((Eq("pinned", False), Range("sensitivity", lt=0.5))), Not(Range("count", gte=1)))),
    And(()),
    Or(()),
)


class VectorIndexConformance(abc.ABC):
    """Protocol tests every :class:`~mars_core.index.base.VectorIndex` must pass.

    Subclass it in a test module, name the subclass ``Test...`` and implement
    :meth:`make_index`. Each test makes its own index on pytest's ``tmp_path``, binds it
    to a stand-in for the record store (the rows the test wrote, which an index that
    loads on demand reads back) and closes it at the end. Entry ids are canonical UUID
    strings (Qdrant accepts nothing else).

    What the index is comes from its :attr:`~mars_core.index.base.VectorIndex.capabilities`:
    ``persistent`` enables the reopen tests (write, close, ``make_index(same path)``,
    bind), ``exact`` the exhaustive-ranking test and tight score tolerances, and
    ``loads_on_demand`` the test of reading a namespace from the record store. The
    filter test keeps fewer than 100 entries per partition, so an approximate index
    such as Chroma's still searches them exhaustively.

    Attributes:
        dim: vector dimension used by the tests.

    Examples:
        >>> import pathlib
        >>> from mars_core.index import NumpyIndex
        >>> class TestNumpy(VectorIndexConformance):
        ...     def make_index(self, path: pathlib.Path) -> NumpyIndex:
        ...         return NumpyIndex()
        >>> index = TestNumpy().make_index(pathlib.Path("unused"))
        >>> index.capabilities.loads_on_demand, index.capabilities.exact
        (True, True)
        >>> index.close()
    """

    dim: ClassVar[int] = 8
    identity: ClassVar[str] = "conformance-store:v1"

    @abc.abstractmethod
    def make_index(self, path: pathlib.Path) -> VectorIndex:
        """A new index; a persistent one keeps its entries under ``path`` (a directory
        that may not exist yet, or any key that tells one test's entries from another's)."""

    # --- helpers ------------------------------------------------------------------------

    @property
    def recorded(self) -> dict[str, int]:
        """The positions this test's "record store" keeps, by stamp (see :meth:`mark`)."""
        if "_recorded" not in self.__dict__:
            self._recorded: dict[str, int] = {}
        return self._recorded

    @contextlib.contextmanager
    def open_index(self, path: pathlib.Path, source: _Source | None = None,
                   identity: str | None = None) -> Iterator[tuple[VectorIndex, _Source]]:
        """:meth:`make_index`, bound to ``source`` (a fresh one by default) and the
        positions :meth:`mark` recorded, then closed; what the bind returned is in
        ``self.applied``."""
        source = source if source is not None else _Source()
        index = self.make_index(path)
        try:
            self.applied = index.bind(identity or self.identity, self.dim, source,
                                      self.recorded)
            yield index, source
        finally:
            index.close()

    def mark(self, index: VectorIndex, applied: int) -> None:
        """What a store does once the index holds every change up to ``applied``: tell
        the index, then record the position beside the index's stamp."""
        index.mark(applied)
        self.recorded[index.stamp] = applied

    def vector(self, *head: float) -> Vector:
        """A unit vector of the test dimension starting with ``head`` (zeros after)."""
        values = np.array([*head, *([0.0] * (self.dim - len(head)))], dtype=np.float64)
        return (values / np.linalg.norm(values)).astype(np.float32)

    def random_vector(self, rng: random.Random) -> Vector:
        """A random unit vector of the test dimension."""
        return self.vector(*(rng.gauss(0.0, 1.0) for _ in range(self.dim)))

    def row(self, n: int, namespace: str = "ns-a", status: MemoryStatus = ACTIVE,
            vector: Vector | None = None, **fields: MetaValue) -> IndexRow:
        """An entry with id ``_uid(n)`` (its vector: a random one seeded by ``n``)."""
        vec = vector if vector is not None else self.random_vector(random.Random(n))
        return IndexRow(_uid(n), namespace, status, vec, fields)

    def write(self, index: VectorIndex, source: _Source, rows: Sequence[IndexRow],
              *, new: bool = False) -> None:
        """What a store does: the records first, then the index."""
        source.rows.update((r.id, r) for r in rows)
        index.upsert(rows, new=new)

    def erase(self, index: VectorIndex, source: _Source, namespace: str,
              ids: Sequence[str]) -> None:
        """Delete from the records, then from the index."""
        for i in ids:
            if i in source.rows and source.rows[i].namespace == namespace:
                del source.rows[i]
        index.delete(namespace, ids)

    def warm(self, index: VectorIndex, *namespaces: str) -> None:
        """Query every partition once, so an index that loads on demand has them loaded
        (its writes then go through its own update path, not a fresh load)."""
        for ns in namespaces:
            for status in MemoryStatus:
                index.query(ns, status, self.vector(1.0), 1)

    def found(self, index: VectorIndex, namespace: str, status: MemoryStatus = ACTIVE,
              where: Filter | None = None, k: int = 500) -> list[str]:
        """Sorted ids of an exhaustive query of one partition."""
        return sorted(i for i, _ in index.query(namespace, status, self.vector(1.0), k, where))

    def tolerance(self, index: VectorIndex) -> float:
        """How close a score must be to the exact cosine."""
        return 1e-5 if index.capabilities.exact else 1e-3

    # --- binding and validation ---------------------------------------------------------

    def test_satisfies_protocol(self, tmp_path: pathlib.Path) -> None:
        index = self.make_index(tmp_path / "index")
        try:
            assert isinstance(index, VectorIndex)
            assert isinstance(index.name, str) and index.name
            assert isinstance(index.location, str) and index.location
            assert isinstance(index.capabilities, IndexCapabilities)
            assert index.bind(self.identity, self.dim, _Source()) == 0  # a fresh index
        finally:
            index.close()

    def test_unbound_index_refuses(self, tmp_path: pathlib.Path) -> None:
        index = self.make_index(tmp_path / "index")
        try:
            calls: list[Callable[[], object]] = [
                lambda: index.upsert([self.row(0)]),
                lambda: index.query("ns-a", ACTIVE, self.vector(1.0), 1),
                lambda: index.delete("ns-a", [_uid(0)]),
                lambda: index.mark(1),
                lambda: index.load("ns-a"),
                index.clear,
                lambda: index.compact(["ns-a"]),
                lambda: index.bind("", self.dim, _Source()),
                lambda: index.bind(self.identity, 0, _Source()),
            ]
            for call in calls:
                with _raises(ValidationError):
                    call()
        finally:
            index.close()

    def test_bad_vectors_and_k_are_refused(self, tmp_path: pathlib.Path) -> None:
        with self.open_index(tmp_path / "index") as (index, source):
            self.write(index, source, [self.row(0)])
            nan = self.vector(1.0)
            nan[1] = np.nan
            with _raises(EmbeddingMismatchError):
                index.upsert([self.row(1, vector=np.ones(self.dim + 1, np.float32))])
            with _raises(EmbeddingMismatchError):
                index.query("ns-a", ACTIVE, np.ones(self.dim - 1, np.float32), 1)
            with _raises(ValidationError):
                index.upsert([self.row(2), self.row(1, vector=nan)])  # the batch, whole
            with _raises(ValidationError):
                index.query("ns-a", ACTIVE, nan, 1)
            with _raises(ValidationError):
                index.query("ns-a", ACTIVE, self.vector(1.0), -1)
            with _raises(ValidationError):
                index.upsert([self.row(3, bad=math.inf)])
            assert self.found(index, "ns-a") == [_uid(0)]

    # --- upsert and query ---------------------------------------------------------------

    def test_round_trip_stays_in_its_partition(self, tmp_path: pathlib.Path) -> None:
        same = self.vector(1.0, 1.0)
        with self.open_index(tmp_path / "index") as (index, source):
            self.warm(index, "ns-a", "ns-b")
            self.write(index, source, [
                self.row(0, vector=same), self.row(1, vector=same),
                self.row(2, status=ARCHIVED, vector=same),
                self.row(3, "ns-b", vector=same), self.row(4, "ns-b", ARCHIVED, vector=same)])
            for forgotten in (False, True):
                if forgotten:
                    index.forget("ns-a")
                    index.forget("ns-b")
                assert self.found(index, "ns-a") == [_uid(0), _uid(1)]
                assert self.found(index, "ns-a", ARCHIVED) == [_uid(2)]
                assert self.found(index, "ns-b") == [_uid(3)]
                assert self.found(index, "ns-b", ARCHIVED) == [_uid(4)]
                assert self.found(index, "ns-c") == []
                for _, score in index.query("ns-a", ACTIVE, same, 5):
                    assert math.isclose(score, 1.0, abs_tol=self.tolerance(index))

    def test_query_orders_by_cosine_then_id(self, tmp_path: pathlib.Path) -> None:
        cosines = {1: 0.0, 2: 1.0, 3: -0.5, 4: 0.9, 5: 0.5, 9: 0.3, 7: 0.3, 8: 0.3}
        rows = [self.row(n, vector=self.vector(c, math.sqrt(1.0 - c * c)))
                for n, c in cosines.items()]
        with self.open_index(tmp_path / "index") as (index, source):
            self.warm(index, "ns-a")
            self.write(index, source, rows)
            hits = index.query("ns-a", ACTIVE, self.vector(1.0), k=len(rows))
            assert [i for i, _ in hits] == [_uid(n) for n in (2, 4, 5, 7, 8, 9, 1, 3)]
            for (_, score), cos in zip(hits, sorted(cosines.values(), reverse=True),
                                       strict=True):
                assert math.isclose(score, cos, abs_tol=self.tolerance(index)), (score, cos)
            assert [i for i, _ in index.query("ns-a", ACTIVE, self.vector(1.0), 2)] == \
                [_uid(2), _uid(4)]

    def test_query_within_restricts_the_candidates(self, tmp_path: pathlib.Path) -> None:
        """``within`` (the ids a time window holds) keeps only those entries, with ``where``
        still applied; ids of no entry, of another partition or of none are harmless."""
        cosines = {1: 1.0, 2: 0.9, 3: 0.5, 4: 0.3, 5: -0.2}
        rows = [self.row(n, vector=self.vector(c, math.sqrt(1.0 - c * c)),
                         type="odd" if n % 2 else "even") for n, c in cosines.items()]
        with self.open_index(tmp_path / "index") as (index, source):
            self.warm(index, "ns-a", "ns-b")
            self.write(index, source, [*rows, self.row(6, namespace="ns-b")])
            window = (_uid(3), _uid(5), _uid(2), _uid(6), _uid(99))
            hits = index.query("ns-a", ACTIVE, self.vector(1.0), 10, within=window)
            assert [i for i, _ in hits] == [_uid(2), _uid(3), _uid(5)]
            assert [i for i, _ in index.query("ns-a", ACTIVE, self.vector(1.0), 1,
                                              within=window)] == [_uid(2)]
            assert [i for i, _ in index.query("ns-a", ACTIVE, self.vector(1.0), 10,
                                              Eq("type", "odd"), within=window)] == [
                _uid(3), _uid(5)]
            assert index.query("ns-a", ACTIVE, self.vector(1.0), 10, within=()) == []
            assert index.query("ns-a", ARCHIVED, self.vector(1.0), 10, within=window) == []
            with _raises(ValidationError):
                index.query("ns-a", ACTIVE, self.vector(1.0), 10, within=_uid(2))

    def test_ties_at_the_boundary_are_broken_by_id(self, tmp_path: pathlib.Path) -> None:
        same = self.vector(0.3, 1.0)
        with self.open_index(tmp_path / "index") as (index, source):
            if not index.capabilities.exact:
                _skip("an approximate index may return any of the tied entries")
            self.write(index, source, [self.row(n, vector=same) for n in (6, 3, 5, 4)])
            assert [i for i, _ in index.query("ns-a", ACTIVE, same, 2)] == [_uid(3), _uid(4)]

    def test_k_larger_than_the_count_and_k_zero(self, tmp_path: pathlib.Path) -> None:
        with self.open_index(tmp_path / "index") as (index, source):
            self.write(index, source, [self.row(n) for n in range(5)])
            for k in (6, 100, 10_000):
                hits = index.query("ns-a", ACTIVE, self.vector(1.0), k)
                assert sorted(i for i, _ in hits) == [_uid(n) for n in range(5)]
                assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
            assert index.query("ns-a", ACTIVE, self.vector(1.0), 0) == []

    def test_exhaustive_when_exact(self, tmp_path: pathlib.Path) -> None:
        rng = random.Random(5)
        rows = [self.row(n, vector=self.random_vector(rng)) for n in range(300)]
        with self.open_index(tmp_path / "index") as (index, source):
            if not index.capabilities.exact:
                _skip("the index is approximate")
            self.write(index, source, rows, new=True)
            for _ in range(3):
                q = self.random_vector(rng)
                cos = exact_cosines([r.vector for r in rows], q)
                best = sorted(range(len(rows)), key=lambda i: (-cos[i], rows[i].id))[:10]
                hits = index.query("ns-a", ACTIVE, q, 10)
                assert [i for i, _ in hits] == [rows[i].id for i in best]
                for (_, score), i in zip(hits, best, strict=True):
                    assert math.isclose(score, cos[i], abs_tol=1e-5)

    def test_upsert_replaces_the_vector_and_fields(self, tmp_path: pathlib.Path) -> None:
        with self.open_index(tmp_path / "index") as (index, source):
            self.warm(index, "ns-a")
            self.write(index, source, [self.row(0, vector=self.vector(1.0), type="a", gone=1),
                                       self.row(1, vector=self.vector(0.0, 1.0), type="b")])
            self.write(index, source, [self.row(0, vector=self.vector(0.0, 1.0), type="b")])
            for where in (Eq("type", "a"), Range("gone"), Eq("gone", 1)):
                assert self.found(index, "ns-a", where=where) == [], where
            assert self.found(index, "ns-a", where=Eq("type", "b")) == [_uid(0), _uid(1)]
            assert self.found(index, "ns-a", where=Not(Eq("gone", 1))) == [_uid(0), _uid(1)]
            ((_, score), _) = index.query("ns-a", ACTIVE, self.vector(0.0, 1.0), 2)
            assert math.isclose(score, 1.0, abs_tol=self.tolerance(index))
            index.upsert([self.row(2, vector=self.vector(1.0)),
                          self.row(2, vector=self.vector(0.0, 0.0, 1.0))])  # the last wins
            assert index.query("ns-a", ACTIVE, self.vector(0.0, 0.0, 1.0), 1)[0][0] == _uid(2)

    def test_new_upserts(self, tmp_path: pathlib.Path) -> None:
        with self.open_index(tmp_path / "index") as (index, source):
            self.warm(index, "ns-a", "ns-b")
            self.write(index, source, [self.row(0), self.row(1, status=ARCHIVED),
                                       self.row(2, "ns-b")], new=True)
            self.write(index, source, [self.row(3, count=1)], new=True)
            assert self.found(index, "ns-a") == [_uid(0), _uid(3)]
            assert self.found(index, "ns-a", ARCHIVED) == [_uid(1)]
            assert self.found(index, "ns-b") == [_uid(2)]
            assert self.found(index, "ns-a", where=Eq("count", 1)) == [_uid(3)]

    def test_status_change_moves_the_entry(self, tmp_path: pathlib.Path) -> None:
        with self.open_index(tmp_path / "index") as (index, source):
            self.warm(index, "ns-a")
            self.write(index, source, [self.row(0), self.row(1), self.row(2, status=ARCHIVED)])
            self.write(index, source, [self.row(0, status=ARCHIVED)])
            assert self.found(index, "ns-a") == [_uid(1)]
            assert self.found(index, "ns-a", ARCHIVED) == [_uid(0), _uid(2)]
            self.write(index, source, [self.row(2), self.row(1, status=ARCHIVED)])
            for forgotten in (False, True):
                if forgotten:
                    index.forget("ns-a")
                assert self.found(index, "ns-a") == [_uid(2)]
                assert self.found(index, "ns-a", ARCHIVED) == [_uid(0), _uid(1)]

    def test_delete(self, tmp_path: pathlib.Path) -> None:
        with self.open_index(tmp_path / "index") as (index, source):
            self.warm(index, "ns-a", "ns-b")
            self.write(index, source, [self.row(0), self.row(1), self.row(2, status=ARCHIVED),
                                       self.row(3, status=ARCHIVED), self.row(4, "ns-b")])
            self.erase(index, source, "ns-a", [_uid(0), _uid(2), _uid(77)])
            self.erase(index, source, "ns-a", [_uid(0)])
            self.erase(index, source, "ns-a", [])
            self.erase(index, source, "ns-b", [_uid(1)])  # not ns-b's: left alone
            for forgotten in (False, True):
                if forgotten:
                    index.forget("ns-a")
                assert self.found(index, "ns-a") == [_uid(1)]
                assert self.found(index, "ns-a", ARCHIVED) == [_uid(3)]
                assert self.found(index, "ns-b") == [_uid(4)]

    def test_filters_agree_with_matches(self, tmp_path: pathlib.Path) -> None:
        rng = random.Random(20240531)
        rows = [replace(self.row(n, vector=self.random_vector(rng)), fields=_random_fields(rng))
                for n in range(60)]
        others = [replace(self.row(100, status=ARCHIVED), fields=_random_fields(rng)),
                  replace(self.row(101, "ns-b"), fields=_random_fields(rng))]
        with self.open_index(tmp_path / "index") as (index, source):
            self.write(index, source, [*rows, *others])
            filters = [*_HANDWRITTEN_FILTERS, *(_random_filter(rng) for _ in range(60))]
            sizes = set()
            for flt in filters:
                expected = sorted(r.id for r in rows if matches(flt, r.fields))
                sizes.add(len(expected))
                assert self.found(index, "ns-a", where=flt, k=len(rows)) == expected, flt
            assert 0 in sizes and len(rows) in sizes and len(sizes) > 10  # not all trivial

    # --- mark, clear, compact -------------------------------------------------------------

    def test_mark_survives_reopen_for_the_same_identity(self, tmp_path: pathlib.Path) -> None:
        path = tmp_path / "index"
        with self.open_index(path) as (index, source):
            if not index.capabilities.persistent:
                _skip("the index is not persistent")
            self.write(index, source, [self.row(0), self.row(1, status=ARCHIVED)])
            self.mark(index, 7)
            self.mark(index, 12)
        with self.open_index(path) as (index, source):
            assert self.applied == 12
            assert self.found(index, "ns-a") == [_uid(0)]
            assert self.found(index, "ns-a", ARCHIVED) == [_uid(1)]
        with self.open_index(path, identity="conformance-store:v2") as (index, _):
            assert self.applied == 0  # the store's next version (embedder, generation)
            assert self.found(index, "ns-a") == self.found(index, "ns-a", ARCHIVED) == []
        with self.open_index(path) as (index, _):
            assert self.applied == 0
            assert self.found(index, "ns-a") == []

    def test_only_the_position_recorded_under_its_stamp_is_trusted(
            self, tmp_path: pathlib.Path) -> None:
        """The records keep the position beside the index's stamp (its identity and an
        epoch); emptying the index draws a new epoch, so a position recorded before
        never claims what the index no longer holds."""
        path = tmp_path / "index"
        with self.open_index(path) as (index, source):
            if not index.capabilities.persistent:
                _skip("the index is not persistent")
            first = index.stamp
            assert first.startswith(self.identity + "#"), first
            self.write(index, source, [self.row(0)])
            self.mark(index, 4)
        self.recorded["conformance-store:v1#another-index"] = 9  # not this index's
        with self.open_index(path) as (index, _):
            assert (self.applied, index.stamp) == (4, first)
            index.clear()
            assert index.stamp not in ("", first)
        with self.open_index(path) as (index, _):
            assert self.applied == 0  # 4 was recorded for what the index held before
            assert self.found(index, "ns-a") == []
        index = self.make_index(path)
        try:
            for bad in ({first: -1}, {first: True}, {1: 2}):
                with _raises(ValidationError):
                    index.bind(self.identity, self.dim, _Source(), bad)  # type: ignore[arg-type]
        finally:
            index.close()

    def test_another_stores_entries_are_refused_or_replaced(
            self, tmp_path: pathlib.Path) -> None:
        """A shared index (a server) refuses to wipe another store's entries; a private
        one replaces them (the directory is this store's)."""
        path = tmp_path / "index"
        with self.open_index(path) as (index, source):
            if not index.capabilities.persistent:
                _skip("the index is not persistent")
            self.write(index, source, [self.row(0)])
            self.mark(index, 3)
            shared = index.capabilities.shared
        other = self.make_index(path)
        try:
            if shared:
                with _raises(ConflictError):
                    other.bind("another-store:v1", self.dim, _Source())
            else:
                assert other.bind("another-store:v1", self.dim, _Source()) == 0
                assert self.found(other, "ns-a") == []
        finally:
            other.close()
        with self.open_index(path) as (index, _):
            assert (self.applied, self.found(index, "ns-a")) == \
                ((3, [_uid(0)]) if shared else (0, []))

    def test_clear_empties(self, tmp_path: pathlib.Path) -> None:
        path = tmp_path / "index"
        with self.open_index(path) as (index, source):
            self.write(index, source, [self.row(0), self.row(1, status=ARCHIVED),
                                       self.row(2, "ns-b")])
            assert self.found(index, "ns-b") == [_uid(2)]
            self.mark(index, 5)
            source.rows.clear()  # a rebuild would follow from the (now empty) records
            index.clear()
            for ns in ("ns-a", "ns-b"):
                assert self.found(index, ns) == self.found(index, ns, ARCHIVED) == []
            persistent = index.capabilities.persistent
        if persistent:
            with self.open_index(path):
                assert self.applied == 0

    def test_compact_keeps_the_entries(self, tmp_path: pathlib.Path) -> None:
        with self.open_index(tmp_path / "index") as (index, source):
            self.warm(index, "ns-a", "ns-b")
            self.write(index, source, [self.row(0), self.row(1), self.row(2, status=ARCHIVED),
                                       self.row(3, "ns-b")])
            self.erase(index, source, "ns-a", [_uid(1)])
            done = index.compact(["ns-a", "ns-b", "ns-never"])
            assert isinstance(done, str) and done
            assert self.found(index, "ns-a") == [_uid(0)]
            assert self.found(index, "ns-a", ARCHIVED) == [_uid(2)]
            assert self.found(index, "ns-b") == [_uid(3)]
            hits = index.query("ns-a", ACTIVE, self.row(0).vector, 1)
            assert math.isclose(hits[0][1], 1.0, abs_tol=self.tolerance(index))

    def test_loads_on_demand_from_the_source(self, tmp_path: pathlib.Path) -> None:
        with self.open_index(tmp_path / "index") as (index, source):
            if not index.capabilities.loads_on_demand:
                _skip("the index does not load on demand")
            source.rows = {r.id: r for r in (self.row(0), self.row(1, status=ARCHIVED),
                                              self.row(2, "ns-b"))}  # never upserted
            assert self.found(index, "ns-a") == [_uid(0)]
            assert self.found(index, "ns-a", ARCHIVED) == [_uid(1)]
            assert source.calls == ["ns-a"]  # one namespace, read once
            source.rows[_uid(3)] = self.row(3)
            index.forget("ns-a")
            assert self.found(index, "ns-a") == [_uid(0), _uid(3)]
            assert source.calls == ["ns-a", "ns-a"]

    def test_after_a_load_queries_read_nothing_but_the_index_from_any_thread(
            self, tmp_path: pathlib.Path) -> None:
        """``load`` does on the caller's thread whatever reads the records; the queries
        after it, on another thread, read nothing else and answer as on this one."""
        with self.open_index(tmp_path / "index") as (index, source):
            rows = [self.row(0), self.row(1), self.row(2, status=ARCHIVED), self.row(3, "ns-b")]
            self.write(index, source, rows)
            index.forget("ns-a")  # a first query would read the records again (numpy)
            index.load("ns-a")
            index.load("never-written")  # nothing to load: no error
            read = list(source.calls)
            asks = [(st, self.row(n).vector) for st in (ACTIVE, ARCHIVED) for n in range(3)]
            there: list[list[tuple[str, float]]] = []
            worker = threading.Thread(target=lambda: there.extend(
                index.query("ns-a", st, vec, 2) for st, vec in asks))
            worker.start()
            worker.join()
            assert source.calls == read  # the queries read no record
            here = [index.query("ns-a", st, vec, 2) for st, vec in asks]
            assert [[i for i, _ in hits] for hits in there] == \
                [[i for i, _ in hits] for hits in here]
            assert {i for hits in there for i, _ in hits} == {_uid(0), _uid(1), _uid(2)}

    def test_closed_index_refuses(self, tmp_path: pathlib.Path) -> None:
        index = self.make_index(tmp_path / "index")
        index.bind(self.identity, self.dim, _Source())
        index.upsert([self.row(0)])
        index.close()
        index.close()  # idempotent
        calls: list[Callable[[], object]] = [
            lambda: index.bind(self.identity, self.dim, _Source()),
            lambda: index.upsert([self.row(1)]),
            lambda: index.query("ns-a", ACTIVE, self.vector(1.0), 1),
            lambda: index.delete("ns-a", [_uid(0)]),
            lambda: index.mark(1),
            lambda: index.load("ns-a"),
            index.clear,
            lambda: index.compact(["ns-a"]),
        ]
        for call in calls:
            with _raises(StoreClosedError):
                call()
