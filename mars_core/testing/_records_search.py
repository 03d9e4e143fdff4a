"""The full-text part of the record-store conformance suite: BM25 over a namespace's
partitions, checked against the specification computed here (:class:`FullTextConformance`)."""

from __future__ import annotations

import math
import pathlib
from collections.abc import Sequence
from typing import Any

from mars_core.model import (
    MemoryNode,
    MemoryStatus,
    MemoryType,
    default_payload,
)
from mars_core.reading.analysis import terms as analysed_terms
from mars_core.storage.base import (
    DeleteMemory,
    RecordStore,
    TermQuery,
    UpdateMemory,
)
from mars_core.testing._common import (
    ACTIVE,
    ARCHIVED,
    _common_only_texts,
    _common_texts,
    _uid,
)
from mars_core.testing._records_harness import RecordStoreHarness

__all__ = ["FullTextConformance"]


class FullTextConformance(RecordStoreHarness):
    """``search_terms`` is Okapi BM25 of the memories searched, exactly (part of
    :class:`~mars_core.testing.records.RecordStoreConformance`)."""

    _TEXTS = ("Ana lives in Porto with her dog", "Bo likes jazz and lives alone",
              "Ana's sister moved to Lisbon", "the dog likes long walks",
              "jazz jazz jazz every night", "nothing in common here")

    def texts(self, namespace: str = "ns-a", first: int = 0,
              texts: Sequence[str] = _TEXTS, **update: Any) -> list[MemoryNode]:
        """Episodic memories of ``texts`` (no speaker), ids from ``first`` on."""
        return [self.node(first + i, namespace, type=MemoryType.EPISODIC, content=t,
                          payload=default_payload(MemoryType.EPISODIC), **update)
                for i, t in enumerate(texts)]

    @staticmethod
    def bm25_reference(nodes: Sequence[MemoryNode], query: str, k1: float = 0.9,
                       b: float = 0.4) -> dict[str, float]:
        """Okapi BM25 of ``query`` over exactly ``nodes`` (the specification)."""
        docs = {n.id: analysed_terms(n.search_text) for n in nodes}
        avgdl = sum(map(len, docs.values())) / len(docs) or 1.0
        out: dict[str, float] = {}
        for i, words in docs.items():
            total = []
            for term in sorted(set(analysed_terms(query))):
                df = sum(term in d for d in docs.values())
                tf = words.count(term)
                if tf:
                    idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
                    total.append(idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(words)
                                                                    / avgdl)))
            if total:
                out[i] = math.fsum(total)
        return out

    def search(self, records: RecordStore, query: str, namespace: str = "ns-a",
               statuses: tuple[MemoryStatus, ...] = (ACTIVE,), k: int = 10,
               **window: float) -> tuple[list[tuple[str, float]], float]:
        with records.read() as tx:
            found = tx.search_terms(TermQuery(namespace, tuple(analysed_terms(query)),
                                              statuses, k, **window))
        return found.hits, found.best

    def test_search_terms_is_bm25_of_the_namespace(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            mine = self.texts()
            self.insert(records, *mine)
            for query in ("Where does Ana live?", "jazz dogs", "likes", "Lisbon"):
                hits, best = self.search(records, query)
                want = self.bm25_reference(mine, query)
                assert [i for i, _ in hits] == sorted(want, key=lambda i: (-want[i], i))
                for i, score in hits:
                    assert score == want[i], (query, i)  # exactly: scored in Python
                assert best == max(want.values())
            assert self.search(records, "Where does Ana live?", k=1)[0][0][0] == mine[0].id
            assert self.search(records, "where is the") == ([], 0.0)  # stop words only
            # another tenant's vocabulary moves nothing here, nor does it match
            before = self.search(records, "jazz Ana")
            self.insert(records, *self.texts("ns-b", 20, ["jazz"] * 9 + ["Ana"]))
            assert self.search(records, "jazz Ana") == before
            assert {i for i, _ in self.search(records, "jazz", "ns-b")[0]} == \
                {_uid(20 + i) for i in range(9)}

    def test_search_terms_follows_statuses_and_erasure(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            mine = self.texts()
            self.insert(records, *mine)
            moved = mine[4].model_copy(update={"status": ARCHIVED})
            with records.write() as tx:
                tx.apply([UpdateMemory(moved, reindex=True)])
            active = [n for n in mine if n.id != moved.id]
            both = (ACTIVE, ARCHIVED)
            assert self.search(records, "jazz")[0] == [(mine[1].id, self.bm25_reference(
                active, "jazz")[mine[1].id])]
            assert self.search(records, "jazz", statuses=(ARCHIVED,))[0] == [
                (moved.id, self.bm25_reference([moved], "jazz")[moved.id])]
            pooled = self.bm25_reference([*active, moved], "jazz")
            assert self.search(records, "jazz", statuses=both)[0] == sorted(
                pooled.items(), key=lambda kv: (-kv[1], kv[0]))
            with records.write() as tx:
                tx.apply([DeleteMemory(mine[1])])
            rest = [n for n in active if n.id != mine[1].id]
            assert self.search(records, "lives", statuses=both)[0] == sorted(
                self.bm25_reference([*rest, moved], "lives").items(),
                key=lambda kv: (-kv[1], kv[0]))
            with records.read() as tx:
                assert tx.totals("ns-a")["ns-a"].active == len(rest)

    def test_search_terms_in_a_window(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            mine = self.texts()
            self.insert(records, *mine)
            stamps = [n.created_at.timestamp() for n in mine]
            full, best = self.search(records, "likes jazz")
            hits, windowed_best = self.search(records, "likes jazz", since=stamps[2],
                                              until=stamps[4])
            assert windowed_best == best  # a window leaves out; it never rescales
            assert hits == [(i, s) for i, s in full if i in {n.id for n in mine[2:5]}]

    def test_search_terms_with_a_common_term_is_still_exact(
            self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            mine = self.texts(texts=_common_texts())
            other = self.texts("ns-b", 100, _common_only_texts())
            self.insert(records, *mine, *other)
            stamps = [n.created_at.timestamp() for n in mine]
            for namespace, nodes, query in (
                    ("ns-a", mine, "Ana jazz"), ("ns-a", mine, "Ana Porto jazz"),
                    ("ns-a", mine, "Ana"), ("ns-a", mine, "Ana lamp"),
                    ("ns-a", mine, "jazz Porto"), ("ns-a", mine, "harp Ana"),
                    ("ns-b", other, "Ana zither")):
                want = self.bm25_reference(nodes, query)
                order = sorted(want, key=lambda i: (-want[i], i))
                for k in (1, 5, 40):
                    hits, best = self.search(records, query, namespace, k=k)
                    assert hits == [(i, want[i]) for i in order[:k]], (query, k)
                    assert best == want[order[0]]
            for query in ("Ana jazz", "harp Ana"):
                want = self.bm25_reference(mine, query)
                inside = {n.id for n in mine[10:81]}
                hits, best = self.search(records, query, k=5, since=stamps[10],
                                         until=stamps[80])
                assert hits == sorted(((i, s) for i, s in want.items() if i in inside),
                                      key=lambda kv: (-kv[1], kv[0]))[:5], query
                assert best == max(want.values())
