"""Test helpers for mars-memory and for people who extend it.

Vector backend conformance suite
--------------------------------
:class:`VectorBackendConformance` is a reusable test class (in the manner of LangChain's
standard tests): subclass it in a ``test_*.py`` file, implement ``make_backend`` and pytest
runs every ``test_*`` method against your backend, through the
:class:`~mars_core.backends.base.VectorBackend` protocol only.

pytest is a *test* dependency (``pip install 'mars-memory[dev]'``): this module imports it
lazily, inside the tests, so importing ``mars_core.testing`` needs only mars-memory's own
dependencies, and running the suite needs pytest.

Example (in ``tests/test_my_backend.py``):
    >>> import pathlib
    >>> from mars_core.backends.memory import InMemoryBackend
    >>> from mars_core.testing import VectorBackendConformance
    >>> class TestMyBackend(VectorBackendConformance):
    ...     persistent = True
    ...     def make_backend(self, path: pathlib.Path) -> InMemoryBackend:
    ...         return InMemoryBackend(path)
    >>> sorted(n for n in dir(TestMyBackend) if n.startswith("test_"))[:2]
    ['test_apply_mixed_batch', 'test_atomic_apply_rolls_back_whole_batch']
"""

from __future__ import annotations

__all__ = ["VectorBackendConformance"]

# =====================================================================================
# Vector backend conformance suite
# =====================================================================================

import abc
import contextlib
import math
import pathlib
import random
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, NoReturn

import numpy as np
import numpy.typing as npt

from mars_core.backends.base import (
    And,
    Eq,
    Filter,
    In,
    MetaValue,
    Not,
    Or,
    Range,
    Record,
    VectorBackend,
    WriteBatch,
    matches,
)
from mars_core.errors import (
    EmbeddingMismatchError,
    MarsError,
    NotFoundError,
    StoreClosedError,
    ValidationError,
)

_VEC = "conformance_vectors"
_PLAIN = "conformance_plain"
_NAMESPACES = ("ns-a", "ns-b", "ns-c")
_TYPES = ("semantic", "episodic", "social")


def _raises(*exc: type[BaseException]) -> contextlib.AbstractContextManager[Any]:
    import pytest

    return pytest.raises(exc)


def _skip(reason: str) -> NoReturn:
    import pytest

    pytest.skip(reason)


def _uid(n: int) -> str:
    """A deterministic UUID string; their order is the order of ``n``."""
    return str(uuid.UUID(int=n + 1))


def _unit(values: Sequence[float]) -> npt.NDArray[np.float32]:
    arr = np.asarray(values, dtype=np.float64)
    return (arr / np.linalg.norm(arr)).astype(np.float32)


def _random_metadata(rng: random.Random) -> dict[str, MetaValue]:
    """Metadata with one type per key; some keys missing on purpose."""
    meta: dict[str, MetaValue] = {"namespace": rng.choice(_NAMESPACES)}
    if rng.random() < 0.8:
        meta["type"] = rng.choice(_TYPES)
    if rng.random() < 0.8:
        meta["sensitivity"] = round(rng.random(), 2)
    if rng.random() < 0.7:
        meta["count"] = rng.randint(0, 5)
    if rng.random() < 0.7:
        meta["pinned"] = rng.random() < 0.5
    return meta


def _random_leaf(rng: random.Random) -> Filter:
    choice = rng.randrange(6)
    if choice == 0:
        return Eq("namespace", rng.choice((*_NAMESPACES, "ns-missing")))
    if choice == 1:
        return In("type", tuple(rng.sample((*_TYPES, "unknown"), rng.randint(1, 3))))
    if choice == 2:
        return Eq("pinned", rng.random() < 0.5)
    if choice == 3:
        return In("count", tuple(rng.sample(range(7), rng.randint(1, 3))))
    lo = round(rng.random() * 0.6, 2)
    if choice == 4:
        return Range("sensitivity", gte=lo, lt=lo + 0.3)
    return Range("count", gt=rng.randint(-1, 3), lte=rng.randint(2, 6))


def _random_filter(rng: random.Random, depth: int = 0) -> Filter:
    if depth >= 2 or rng.random() < 0.45:
        return _random_leaf(rng)
    kind = rng.randrange(3)
    if kind == 2:
        return Not(_random_filter(rng, depth + 1))
    clauses = tuple(_random_filter(rng, depth + 1) for _ in range(rng.randint(2, 3)))
    return And(clauses) if kind == 0 else Or(clauses)


_HANDWRITTEN_FILTERS: tuple[Filter, ...] = (
    Eq("namespace", "ns-a"),
    Eq("pinned", True),
    Eq("count", 3),
    In("type", ("semantic", "social")),
    Range("sensitivity", gt=0.25),
    Range("sensitivity", gte=0.5),
    Range("count", lt=2),
    Range("count", lte=2),
    Range("sensitivity", gte=0.2, lte=0.6),
    And((Eq("namespace", "ns-b"), Eq("type", "episodic"))),
    Or((Eq("namespace", "ns-c"), Range("count", gte=4))),
    Not(Eq("namespace", "ns-a")),
    Not(Eq("pinned", True)),  # also matches records without "pinned"
    And((Eq("namespace", "ns-a"), Not(In("type", ("semantic",))))),
    Or((And((Eq("pinned", False), Range("sensitivity", lt=0.5))), Not(Range("count", gte=1)))),
)


class VectorBackendConformance(abc.ABC):
    """Protocol tests every :class:`~mars_core.backends.base.VectorBackend` must pass.

    Subclass it in a test module, name the subclass ``Test...`` and implement
    :meth:`make_backend`. Each test opens its own backend on pytest's ``tmp_path`` and
    closes it at the end.

    Attributes:
        persistent: the backend persists to ``path``; enables the reopen tests (write,
            close, ``make_backend(same path)``, compare).
        atomic_apply: ``apply`` is all-or-nothing across operations; enables the test
            that a batch failing in its last operation changes nothing.
        dim: vector dimension used by the tests.

    Examples:
        >>> import pathlib
        >>> from mars_core.backends.memory import InMemoryBackend
        >>> class TestInMemory(VectorBackendConformance):
        ...     atomic_apply = True
        ...     def make_backend(self, path: pathlib.Path) -> InMemoryBackend:
        ...         return InMemoryBackend()
        >>> TestInMemory().make_backend(pathlib.Path(".")).name
        'inmemory'
    """

    persistent: ClassVar[bool] = False
    atomic_apply: ClassVar[bool] = False
    dim: ClassVar[int] = 8

    @abc.abstractmethod
    def make_backend(self, path: pathlib.Path) -> VectorBackend:
        """A new backend; persistent backends store their data under ``path``."""

    # --- helpers ------------------------------------------------------------------------

    @contextlib.contextmanager
    def open_backend(self, path: pathlib.Path) -> Iterator[VectorBackend]:
        """``make_backend(path)`` as a context manager that closes it."""
        backend = self.make_backend(path)
        try:
            yield backend
        finally:
            backend.close()

    def vector(self, *head: float) -> npt.NDArray[np.float32]:
        """A unit vector of the test dimension starting with ``head`` (zeros after)."""
        values = [*head, *([0.0] * (self.dim - len(head)))]
        return _unit(values)

    def random_vector(self, rng: random.Random) -> npt.NDArray[np.float32]:
        """A random unit vector of the test dimension."""
        return _unit([rng.gauss(0.0, 1.0) for _ in range(self.dim)])

    def seed(self, backend: VectorBackend, n: int, seed: int = 7) -> list[Record]:
        """Create the test collection and upsert ``n`` random records; returns them."""
        rng = random.Random(seed)
        backend.ensure_collection(_VEC, self.dim)
        records = [
            Record(_uid(i), self.random_vector(rng), f"doc {i}", _random_metadata(rng))
            for i in range(n)
        ]
        backend.upsert(_VEC, records)
        return records

    def dump(self, backend: VectorBackend, collection: str) -> list[tuple[Any, ...]]:
        """Comparable state of a collection: sorted ``(id, document, metadata, vector)``."""
        rows = []
        for r in backend.get(collection, with_vectors=True):
            vec = None if r.vector is None else tuple(np.round(r.vector, 5).tolist())
            rows.append((r.id, r.document, dict(r.metadata), vec))
        return sorted(rows, key=lambda row: row[0])

    @staticmethod
    def assert_same_record(actual: Record, expected: Record) -> None:
        """Same id, document, metadata and (within 1e-6) vector."""
        assert actual.id == expected.id
        assert actual.document == expected.document
        assert dict(actual.metadata) == dict(expected.metadata)
        assert type(actual.metadata.get("pinned")) is type(expected.metadata.get("pinned"))
        if expected.vector is not None:
            assert actual.vector is not None, f"{actual.id}: vector missing"
            np.testing.assert_allclose(actual.vector, expected.vector, atol=1e-6)

    # --- collections ----------------------------------------------------------------------

    def test_satisfies_protocol(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            assert isinstance(b, VectorBackend)
            assert isinstance(b.name, str) and b.name

    def test_ensure_collection_is_idempotent(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            records = self.seed(b, 3)
            b.ensure_collection(_VEC, self.dim)
            b.ensure_collection(_VEC, self.dim)
            assert sorted(r.id for r in b.get(_VEC)) == sorted(r.id for r in records)

    def test_ensure_collection_dimension_mismatch(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            b.ensure_collection(_VEC, self.dim)
            with _raises(EmbeddingMismatchError):
                b.ensure_collection(_VEC, self.dim + 1)
            b.ensure_collection(_PLAIN, 0)
            with _raises(EmbeddingMismatchError):
                b.ensure_collection(_PLAIN, self.dim)

    def test_unknown_collection_is_not_found(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            rec = Record(_uid(0), self.vector(1.0), "x", {})
            with _raises(NotFoundError):
                b.upsert("nope", [rec])
            with _raises(NotFoundError):
                b.query("nope", self.vector(1.0), 3)
            with _raises(NotFoundError):
                b.get("nope")
            with _raises(NotFoundError):
                b.delete("nope", [_uid(0)])

    # --- upsert / get ------------------------------------------------------------------------

    def test_upsert_get_round_trip(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            b.ensure_collection(_VEC, self.dim)
            meta: dict[str, MetaValue] = {"s": "é ✓", "i": -3, "f": 0.125, "b": False}
            rec = Record(_uid(1), self.vector(0.3, -0.4, 0.5), "a document\nwith lines", meta)
            b.upsert(_VEC, [rec])
            (got,) = b.get(_VEC, [_uid(1)], with_vectors=True)
            self.assert_same_record(got, rec)
            assert type(got.metadata["i"]) is int and type(got.metadata["b"]) is bool
            assert type(got.metadata["f"]) is float

    def test_upsert_is_idempotent(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            records = self.seed(b, 5)
            before = self.dump(b, _VEC)
            b.upsert(_VEC, records)
            b.upsert(_VEC, records[:2])
            assert self.dump(b, _VEC) == before
            assert len(b.get(_VEC)) == 5

    def test_upsert_replaces_document_and_metadata(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            b.ensure_collection(_VEC, self.dim)
            b.upsert(_VEC, [Record(_uid(1), self.vector(1.0), "old", {"a": "x", "gone": 1})])
            b.upsert(_VEC, [Record(_uid(1), self.vector(0.0, 1.0), "new", {"a": "y"})])
            (got,) = b.get(_VEC, [_uid(1)], with_vectors=True)
            assert (got.document, dict(got.metadata)) == ("new", {"a": "y"})
            assert got.vector is not None
            np.testing.assert_allclose(got.vector, self.vector(0.0, 1.0), atol=1e-6)
            assert b.get(_VEC, where=Eq("a", "x")) == []

    def test_same_id_twice_in_one_call_last_wins(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            b.ensure_collection(_VEC, self.dim)
            first = Record(_uid(1), self.vector(1.0), "first", {"v": 1})
            last = Record(_uid(1), self.vector(0.0, 1.0), "last", {"v": 2})
            b.upsert(_VEC, [first, last])
            (got,) = b.get(_VEC, with_vectors=True)
            self.assert_same_record(got, last)

    def test_upsert_without_vector_keeps_vector(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            records = self.seed(b, 4)
            target = records[2]
            b.upsert(_VEC, [Record(target.id, None, "edited", {"namespace": "ns-z"})])
            (got,) = b.get(_VEC, [target.id], with_vectors=True)
            expected = Record(target.id, target.vector, "edited", {"namespace": "ns-z"})
            self.assert_same_record(got, expected)
            assert target.vector is not None
            (hit,) = b.query(_VEC, target.vector, 1)
            assert hit.record.id == target.id and math.isclose(hit.score, 1.0, abs_tol=1e-4)

    def test_upsert_without_vector_for_new_id_is_rejected(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            self.seed(b, 2)
            before = self.dump(b, _VEC)
            with _raises(ValidationError):
                b.upsert(_VEC, [Record(_uid(99), None, "no vector", {})])
            assert self.dump(b, _VEC) == before

    def test_get_by_ids_keeps_order_and_skips_missing(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            self.seed(b, 5)
            ids = [_uid(3), _uid(0), _uid(42), _uid(4)]
            assert [r.id for r in b.get(_VEC, ids)] == [_uid(3), _uid(0), _uid(4)]
            assert b.get(_VEC, [_uid(42)]) == []

    def test_get_by_ids_and_filter(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            records = self.seed(b, 12)
            ids = [r.id for r in records[:8]]
            flt = Eq("namespace", "ns-a")
            got = {r.id for r in b.get(_VEC, ids, where=flt)}
            assert got == {r.id for r in records[:8] if matches(flt, r.metadata)}

    def test_returned_records_are_copies(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            records = self.seed(b, 1)
            (got,) = b.get(_VEC, with_vectors=True)
            assert got.vector is not None
            if got.vector.flags.writeable:
                got.vector[:] = 0.0
            if isinstance(got.metadata, dict):
                got.metadata["namespace"] = "tampered"
            (again,) = b.get(_VEC, with_vectors=True)
            self.assert_same_record(again, records[0])

    # --- query -----------------------------------------------------------------------------

    def test_query_orders_by_similarity(self, tmp_path: pathlib.Path) -> None:
        cosines = (0.0, 1.0, -0.5, 0.9, 0.5)
        with self.open_backend(tmp_path / "store") as b:
            b.ensure_collection(_VEC, self.dim)
            b.upsert(
                _VEC,
                [
                    Record(_uid(i), self.vector(c, math.sqrt(1.0 - c * c)), f"c={c}", {})
                    for i, c in enumerate(cosines)
                ],
            )
            hits = b.query(_VEC, self.vector(1.0), k=len(cosines))
            assert [h.record.id for h in hits] == [_uid(1), _uid(3), _uid(4), _uid(0), _uid(2)]
            assert math.isclose(hits[0].score, 1.0, abs_tol=1e-4)
            for hit, cos in zip(hits, sorted(cosines, reverse=True), strict=True):
                assert math.isclose(hit.score, cos, abs_tol=1e-3), (hit.score, cos)
            assert hits[0].record.document == "c=1.0"

    def test_query_k_larger_than_count(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            records = self.seed(b, 6)
            hits = b.query(_VEC, self.vector(1.0), k=100)
            assert sorted(h.record.id for h in hits) == sorted(r.id for r in records)
            scores = [h.score for h in hits]
            assert scores == sorted(scores, reverse=True)

    def test_query_k_zero(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            self.seed(b, 3)
            assert b.query(_VEC, self.vector(1.0), k=0) == []

    def test_query_wrong_dimension(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            self.seed(b, 2)
            with _raises(EmbeddingMismatchError, ValidationError):
                b.query(_VEC, np.ones(self.dim + 1, dtype=np.float32), k=1)

    def test_upsert_wrong_dimension(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            self.seed(b, 2)
            before = self.dump(b, _VEC)
            bad = Record(_uid(9), np.ones(self.dim - 1, dtype=np.float32), "", {})
            with _raises(EmbeddingMismatchError, ValidationError):
                b.upsert(_VEC, [bad])
            assert self.dump(b, _VEC) == before

    def test_non_finite_vectors_rejected(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            self.seed(b, 2)
            before = self.dump(b, _VEC)
            nan = self.vector(1.0).copy()
            nan[1] = np.nan
            with _raises(ValidationError):
                b.upsert(_VEC, [Record(_uid(5), nan, "", {})])
            with _raises(ValidationError):
                b.query(_VEC, nan, k=1)
            assert self.dump(b, _VEC) == before

    # --- filters ---------------------------------------------------------------------------

    def test_filters_agree_with_matches(self, tmp_path: pathlib.Path) -> None:
        rng = random.Random(20240531)
        with self.open_backend(tmp_path / "store") as b:
            records = self.seed(b, 60, seed=11)
            filters = [*_HANDWRITTEN_FILTERS, *(_random_filter(rng) for _ in range(60))]
            sizes = set()
            for flt in filters:
                expected = {r.id for r in records if matches(flt, r.metadata)}
                sizes.add(len(expected))
                got = {r.id for r in b.get(_VEC, where=flt)}
                assert got == expected, flt
                hits = b.query(_VEC, self.vector(1.0), k=len(records), where=flt)
                assert {h.record.id for h in hits} == expected, flt
            assert 0 in sizes and len(sizes) > 10  # the filters are not all trivial

    def test_namespace_isolation(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            b.ensure_collection(_VEC, self.dim)
            same = self.vector(1.0, 1.0)
            recs = [
                Record(_uid(i), same, "secret", {"namespace": "A" if i % 2 else "B"})
                for i in range(10)
            ]
            b.upsert(_VEC, recs)
            for where in (
                Eq("namespace", "B"),
                And((Eq("namespace", "B"),)),
                In("namespace", ("B",)),
            ):
                hits = b.query(_VEC, same, k=10, where=where)
                assert len(hits) == 5
                assert all(h.record.metadata["namespace"] == "B" for h in hits)
                got = b.get(_VEC, where=where)
                assert {r.id for r in got} == {r.id for r in recs if r.metadata["namespace"] == "B"}
            assert b.query(_VEC, same, k=10, where=Eq("namespace", "C")) == []

    # --- delete ----------------------------------------------------------------------------

    def test_delete_missing_is_noop(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            self.seed(b, 3)
            before = self.dump(b, _VEC)
            b.delete(_VEC, [_uid(77)])
            b.delete(_VEC, [])
            assert self.dump(b, _VEC) == before

    def test_delete_then_get_and_query(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            records = self.seed(b, 5)
            gone = records[1]
            b.delete(_VEC, [gone.id])
            b.delete(_VEC, [gone.id])
            assert b.get(_VEC, [gone.id]) == []
            assert gone.id not in {r.id for r in b.get(_VEC)}
            assert gone.vector is not None
            hits = b.query(_VEC, gone.vector, k=10)
            assert len(hits) == 4 and gone.id not in {h.record.id for h in hits}
            kept = b.get(_VEC, [records[4].id], with_vectors=True)
            self.assert_same_record(kept[0], records[4])

    # --- dimension 0 -----------------------------------------------------------------------

    def test_dimension_zero_collection(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            b.ensure_collection(_PLAIN, 0)
            recs = [
                Record(_uid(i), None, f"entry {i}", {"kind": "audit", "n": i}) for i in range(6)
            ]
            b.upsert(_PLAIN, recs)
            got = b.get(_PLAIN, where=Range("n", gte=2, lt=5))
            assert sorted(r.id for r in got) == [_uid(2), _uid(3), _uid(4)]
            assert [r.document for r in b.get(_PLAIN, [_uid(5)])] == ["entry 5"]
            b.upsert(_PLAIN, [Record(_uid(5), None, "entry 5 edited", {"kind": "audit"})])
            assert [r.document for r in b.get(_PLAIN, [_uid(5)])] == ["entry 5 edited"]
            with _raises(MarsError):
                b.query(_PLAIN, np.zeros(1, dtype=np.float32), k=1)
            with _raises(ValidationError):
                b.upsert(_PLAIN, [Record(_uid(9), self.vector(1.0), "", {})])

    # --- batches and validation ---------------------------------------------------------------

    def test_apply_mixed_batch(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            records = self.seed(b, 3)
            b.ensure_collection(_PLAIN, 0)
            batch = (
                WriteBatch()
                .upsert(_VEC, [Record(_uid(10), self.vector(0.0, 0.0, 1.0), "new", {"k": 1})])
                .upsert(_PLAIN, [Record(_uid(20), None, "log", {"kind": "audit"})])
                .delete(_VEC, [records[0].id])
                .upsert(_VEC, [Record(records[1].id, None, "edited", {"k": 2})])
            )
            b.apply(batch)
            assert sorted(r.id for r in b.get(_VEC)) == sorted(
                [records[1].id, records[2].id, _uid(10)]
            )
            (edited,) = b.get(_VEC, [records[1].id], with_vectors=True)
            self.assert_same_record(
                edited, Record(records[1].id, records[1].vector, "edited", {"k": 2})
            )
            assert [r.document for r in b.get(_PLAIN)] == ["log"]
            (hit,) = b.query(_VEC, self.vector(0.0, 0.0, 1.0), k=1)
            assert hit.record.id == _uid(10)

    def test_invalid_batch_changes_nothing(self, tmp_path: pathlib.Path) -> None:
        with self.open_backend(tmp_path / "store") as b:
            records = self.seed(b, 3)
            before = self.dump(b, _VEC)
            nan = np.full(self.dim, np.nan, dtype=np.float32)
            bad = [
                Record(_uid(50), self.vector(1.0), "ok 1", {}),
                Record(records[0].id, self.vector(0.0, 1.0), "changed", {}),
                Record(_uid(51), nan, "nan", {}),
            ]
            with _raises(ValidationError):
                b.apply(WriteBatch().upsert(_VEC, bad))
            with _raises(ValidationError):
                b.upsert(_VEC, bad)
            nested: Any = {"nested": {"a": 1}}
            bad_meta = [*bad[:2], Record(_uid(52), self.vector(1.0), "", nested)]
            with _raises(ValidationError):
                b.upsert(_VEC, bad_meta)
            assert self.dump(b, _VEC) == before

    def test_atomic_apply_rolls_back_whole_batch(self, tmp_path: pathlib.Path) -> None:
        if not self.atomic_apply:
            _skip("backend does not claim atomic apply (set atomic_apply = True)")
        with self.open_backend(tmp_path / "store") as b:
            records = self.seed(b, 3)
            b.ensure_collection(_PLAIN, 0)
            before = (self.dump(b, _VEC), self.dump(b, _PLAIN))
            batch = (
                WriteBatch()
                .delete(_VEC, [records[0].id])
                .upsert(_PLAIN, [Record(_uid(30), None, "log", {})])
                .upsert(_VEC, [Record(_uid(31), self.vector(1.0), "x", {"bad": math.inf})])
            )
            with _raises(ValidationError):
                b.apply(batch)
            assert (self.dump(b, _VEC), self.dump(b, _PLAIN)) == before

    # --- lifecycle -----------------------------------------------------------------------------

    def test_close_then_call_raises(self, tmp_path: pathlib.Path) -> None:
        b = self.make_backend(tmp_path / "store")
        self.seed(b, 1)
        b.close()
        b.close()  # idempotent
        rec = Record(_uid(2), self.vector(1.0), "", {})
        calls: list[Callable[[], object]] = [
            lambda: b.ensure_collection(_VEC, self.dim),
            lambda: b.upsert(_VEC, [rec]),
            lambda: b.query(_VEC, self.vector(1.0), 1),
            lambda: b.get(_VEC),
            lambda: b.delete(_VEC, [_uid(0)]),
            lambda: b.apply(WriteBatch().delete(_VEC, [_uid(0)])),
        ]
        for call in calls:
            with _raises(StoreClosedError):
                call()

    def test_reopen_round_trip(self, tmp_path: pathlib.Path) -> None:
        if not self.persistent:
            _skip("backend is not persistent (set persistent = True)")
        path = tmp_path / "store"
        with self.open_backend(path) as b:
            records = self.seed(b, 20)
            b.ensure_collection(_PLAIN, 0)
            b.upsert(_PLAIN, [Record(_uid(100), None, "audit ✓", {"n": 1, "ok": True})])
            b.upsert(_VEC, [Record(records[0].id, None, "edited", {"namespace": "ns-b"})])
            b.delete(_VEC, [records[1].id, _uid(999)])
            b.apply(WriteBatch().delete(_VEC, [records[2].id]).upsert(_VEC, records[1:2]))
            expected = {c: b.get(c, with_vectors=True) for c in (_VEC, _PLAIN)}
            query = self.vector(1.0, -1.0)
            expected_hits = b.query(_VEC, query, k=5, where=Eq("namespace", "ns-b"))
        with self.open_backend(path) as b:
            b.ensure_collection(_VEC, self.dim)
            b.ensure_collection(_PLAIN, 0)
            for coll, recs in expected.items():
                got = {r.id: r for r in b.get(coll, with_vectors=True)}
                assert sorted(got) == sorted(r.id for r in recs)
                for rec in recs:
                    self.assert_same_record(got[rec.id], rec)
            hits = b.query(_VEC, query, k=5, where=Eq("namespace", "ns-b"))
            assert [h.record.id for h in hits] == [h.record.id for h in expected_hits]
            for hit, exp in zip(hits, expected_hits, strict=True):
                assert math.isclose(hit.score, exp.score, abs_tol=1e-6)
            with _raises(EmbeddingMismatchError):
                b.ensure_collection(_VEC, self.dim * 2)

    def test_reopen_several_sessions(self, tmp_path: pathlib.Path) -> None:
        if not self.persistent:
            _skip("backend is not persistent (set persistent = True)")
        path = tmp_path / "store"
        rng = random.Random(3)
        expected: dict[str, Record] = {}
        for session in range(4):
            with self.open_backend(path) as b:
                b.ensure_collection(_VEC, self.dim)
                assert {r.id for r in b.get(_VEC)} == set(expected)
                new = [
                    Record(_uid(session * 10 + i), self.random_vector(rng), f"s{session}", {})
                    for i in range(3)
                ]
                b.upsert(_VEC, new)
                expected.update((r.id, r) for r in new)
                victim = sorted(expected)[0]
                b.delete(_VEC, [victim])
                del expected[victim]
        with self.open_backend(path) as b:
            got = {r.id: r for r in b.get(_VEC, with_vectors=True)}
            assert sorted(got) == sorted(expected)
            for rid, rec in expected.items():
                self.assert_same_record(got[rid], rec)


# =====================================================================================
# end of the vector backend conformance suite
# =====================================================================================
