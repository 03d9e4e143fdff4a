"""``mars bench store`` in a small smoke run: every section measures something real and
reports the ratios the full run is judged by (docs/benchmarks/storage.md has the full
figures; no assertion here depends on how fast the machine is)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mars_core.bench import storage


@pytest.mark.slow
def test_every_section_runs_and_reports_its_ratios(tmp_path: Path) -> None:
    pytest.importorskip("chromadb")
    model = storage.HashingEmbedder(dim=48)  # stands for MiniLM: another embedder
    result = storage.run(n=200, block=4, rounds=2, big=400, namespaces=8,
                         indexes=("chroma", "numpy"), quick=True, workdir=tmp_path,
                         model=model)
    assert [c["index"] for c in result["cost"]] == ["chroma", "numpy"]
    for c in result["cost"]:
        assert c["samples"] == 8 and c["n"] == 200
        for key in ("add_ratio", "read_only_ratio", "access_ratio", "observe_ratio",
                    "mix_ratio"):
            assert c[key] > 0, (c["index"], key)
    assert [(b["index"], b["embedder"], b["n"]) for b in result["bulk"]] == [
        ("chroma", "precomputed", 50), ("numpy", "precomputed", 50),
        ("chroma", model.name, 40), ("numpy", model.name, 40)]
    assert all(b["throughput_ratio"] > 0 for b in result["bulk"])
    memory = result["memory"]
    assert memory["store"]["hits"] > 0 and memory["raw"]["hits"] > 0  # real retrievals
    assert memory["rss_ratio"] > 0
    for s in result["scale"]:
        assert s["large"]["hits"] > 0 and s["small"]["hits"] > 0
        assert s["open_ratio"] > 0 and s["rss_ratio"] > 0
    text = storage.table(result)
    assert "| chroma | 200 |" in text and "namespaces" in text


def test_the_table_embedder_hands_back_the_hashing_vectors() -> None:
    texts = storage.make_texts(5)
    emb = storage.TableEmbedder(texts, dim=32)
    assert emb.embed(texts).tolist() == storage.HashingEmbedder(dim=32).embed(texts).tolist()
    assert emb.embed(["not in the table"]).shape == (1, 32)
