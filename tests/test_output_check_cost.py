"""The output check costs what the context costs (issue 29, item 4): the first read of a
long-lived namespace compares the lines it shows with the namespace's protected facts,
read by one query, and never reads its history for it.

Counted, not timed: the rows the record store hands out during the first
``render_context`` (and ``retrieve``) of a fresh process, with the check on and off, for
a namespace of 100 and of 1,000 archived memories holding the same protected facts.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mars_core import FakeClock, HashingEmbedder, MemoryStore
from mars_core.storage.sqlite import SQLiteRecordStore

SENSITIVE = ("I have type 1 diabetes since spring", "My HIV test came back positive",
             "The alarm code for the house is 7319")
_READS = ("memories", "memory", "vectors", "sensitive", "refs", "index_rows", "edges")


class _Counted:
    """A read transaction that counts the rows each read hands out."""

    def __init__(self, tx: Any, rows: Counter[str]) -> None:
        self._tx, self._rows = tx, rows

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._tx, name)
        if name not in _READS:
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            out = attr(*args, **kwargs)
            if name == "index_rows":
                out = list(out)
            self._rows[name] += (out is not None) if name == "memory" else len(out)
            return out
        return counted


class CountingRecords(SQLiteRecordStore):
    """SQLite records that count what their read transactions hand out."""

    rows: Counter[str]

    def read(self) -> Any:
        @contextlib.contextmanager
        def counted() -> Iterator[_Counted]:
            with super(CountingRecords, self).read() as tx:
                yield _Counted(tx, self.rows)
        return counted()


def _build(path: Path, history: int) -> None:
    with MemoryStore.open(path, embedder=HashingEmbedder(), index="numpy", nlp="off",
                          budget=300, clock=FakeClock()) as s:
        for text in SENSITIVE:  # first: the budget archives them with the rest
            s.add(text, sensitivity=0.9)
        s.add_many([f"note {i}: the weather in town {i % 7} was fine" for i in range(history)])
        s.add("Noted: 7319 disarms the alarm at your house", type="semantic")


def _first_read(path: Path, redact: bool) -> tuple[Counter[str], str, int]:
    records = CountingRecords(path / "mars.sqlite3")
    records.rows = Counter()
    with MemoryStore(records, embedder=HashingEmbedder(), clock=FakeClock()) as s:
        archived = s.stats()["namespaces"]["default"]["archived"]
        records.rows.clear()
        text = s.render_context("what disarms the alarm at the house?", redact=redact)
        s.retrieve("what disarms the alarm at the house?", redact=redact)
        return records.rows, text, archived


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    root = tmp_path_factory.mktemp("long-lived")
    out = {}
    for history in (100, 1000):
        _build(root / str(history), history)
        out[history] = root / str(history)
    return out


def test_the_privacy_pass_reads_the_protected_facts_not_the_history(
        stores: dict[int, Path]) -> None:
    extra = {}
    for history, path in stores.items():
        on, text, archived = _first_read(path, redact=True)
        off, raw, _ = _first_read(path, redact=False)
        assert archived >= history - 50  # a long-lived namespace: most of it is archived
        assert "7319" in raw and "7319" not in text  # the check ran, and masked
        assert on["sensitive"] == len(SENSITIVE)  # one query: the protected facts only
        extra[history] = {k: on[k] - off[k] for k in on | off if on[k] != off[k]}
    # what the check read beyond the read itself: the same with 10x the history, and no
    # more than the protected facts (their vectors come with the query) and the text of
    # the few nearest of them
    assert extra[100] == extra[1000]
    assert sum(extra[1000].values()) <= 2 * len(SENSITIVE)
    assert extra[1000].get("refs", 0) == 0 and extra[1000].get("index_rows", 0) == 0
