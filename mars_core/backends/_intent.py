"""The write path of the server-backed backends (Chroma, Qdrant), written once.

A write is validated whole (:meth:`IntentBackend._prepare`); when it takes more than one
request to the server it is first recorded as a write-ahead intent
(:class:`~mars_core.backends.wal.WriteAheadLog`), so a crash part-way is completed by the
next write or the next open (:meth:`IntentBackend.recover`; on a shared backend only by an
explicit ``recover()``: the store's, once it holds the writer lease). A backend supplies how to
read a collection's dimension, fetch existing ids, check an id or a metadata key, wrap its
client's errors, and apply prepared operations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager

from mars_core._guard import guarded
from mars_core.backends._records import Alive, coalesce, distinct_ids, prepare_record
from mars_core.backends.base import BackendBase, DeleteOp, Op, Record, UpsertOp
from mars_core.backends.wal import WriteAheadLog
from mars_core.errors import ValidationError

__all__ = ["IntentBackend"]


class IntentBackend(BackendBase):
    """``_write`` through a write-ahead intent when a batch needs several requests."""

    _wal: WriteAheadLog
    _dirty: bool
    _reserved_keys: str
    """How the backend's reserved metadata keys are described in errors."""

    def _write(self, ops: Sequence[Op]) -> None:
        """Validate ``ops`` whole, then apply them (through an intent when it takes >1 request)."""
        if self._dirty:
            self._recover()
        prepared = self._prepare(ops)
        if not prepared:
            return
        if sum(self._requests(op) for op in prepared) <= 1:
            self._apply(prepared, replay=False)
            return
        with self._errors("record a write-ahead intent"):
            intent = self._wal.begin(prepared)
        self._dirty = True
        self._apply(prepared, replay=False)
        with self._errors("delete a write-ahead intent"):
            self._wal.commit(intent)
        self._dirty = False

    def _requests(self, op: Op) -> int:
        """How many write requests ``op`` takes (one per :meth:`_request_size` ids)."""
        return -(-distinct_ids(op) // self._request_size())

    @guarded
    def recover(self) -> int:
        """Replay the write-ahead intents left unfinished; returns how many."""
        return self._recover()

    @guarded
    def pending_batches(self) -> int:
        """How many complete write-ahead intents are waiting (begun, not committed)."""
        with self._errors("read the write-ahead intents"):
            return len(self._wal.pending())

    def _recover(self) -> int:
        with self._errors("replay unfinished write-ahead intents"):
            done = self._wal.recover(lambda ops: self._apply(ops, replay=True))
        self._dirty = False
        return done

    def _recover_on_open(self, recover: bool | None) -> None:
        """Replay leftover intents now (``recover``; ``None``: unless :attr:`shared`).

        On a shared backend a leftover intent may be a live writer's batch in flight:
        replaying it from here, or before this client's first write, could undo that
        writer's later writes. There they wait for an explicit :meth:`recover`, which
        the store calls once it holds the writer lease (a reader never does).
        """
        if recover if recover is not None else not self.shared:
            self._recover()

    def _prepare(self, ops: Sequence[Op]) -> list[Op]:
        """Validate, normalise and join neighbouring operations (:func:`coalesce`).

        ``alive`` follows the ids created and deleted earlier in ``ops``.
        """
        for op in ops:
            if not isinstance(op, UpsertOp | DeleteOp):
                raise ValidationError(f"unknown batch operation {op!r}")
        dims = {op.collection: self._dim(op.collection) for op in ops}
        alive = self._existing_kept_vector_ids(ops, dims)
        out: list[Op] = []
        for op in ops:
            if isinstance(op, DeleteOp):
                ids = tuple(self._check_ids(op.ids))
                alive.update(((op.collection, i), False) for i in ids)
                if ids:
                    out.append(DeleteOp(op.collection, ids))
                continue
            recs = tuple(
                prepare_record(r, dim=dims[op.collection], collection=op.collection,
                               alive=alive, check_id=self._check_id,
                               storable_key=self._storable_key, reserved=self._reserved_keys)
                for r in op.records
            )
            if recs:
                out.append(UpsertOp(op.collection, recs))
        return coalesce(out)

    def _existing_kept_vector_ids(self, ops: Sequence[Op], dims: Mapping[str, int]) -> Alive:
        """Which ids of ``vector=None`` upserts exist now (one read per collection)."""
        asked: dict[str, list[str]] = {}
        for op in ops:
            if isinstance(op, UpsertOp) and dims[op.collection]:
                asked.setdefault(op.collection, []).extend(
                    r.id for r in op.records
                    if isinstance(r, Record) and self._may_exist(r.id)
                    and r.vector is None
                )
        alive: Alive = {}
        for name, ids in asked.items():
            if ids:
                found = self._fetch_ids(name, list(dict.fromkeys(ids)))
                alive.update(((name, r.id), True) for r in found)
        return alive

    # --- what a server-backed backend provides ---------------------------------------------

    def _request_size(self) -> int:  # pragma: no cover
        raise NotImplementedError

    def _errors(self, action: str) -> AbstractContextManager[None]:  # pragma: no cover
        raise NotImplementedError

    def _dim(self, collection: str) -> int:  # pragma: no cover
        """The collection's dimension. Raises ``NotFoundError`` when it does not exist."""
        raise NotImplementedError

    def _fetch_ids(self, collection: str, ids: list[str]) -> list[Record]:  # pragma: no cover
        raise NotImplementedError

    def _may_exist(self, rid: object) -> bool:  # pragma: no cover
        """Whether ``rid`` is an id the backend could hold (an invalid one is refused later)."""
        raise NotImplementedError

    def _apply(self, ops: Sequence[Op], *, replay: bool) -> None:  # pragma: no cover
        raise NotImplementedError

    _check_id: Callable[[object], None]
    _storable_key: Callable[[str], bool]
