"""Smoke run of ``mars bench backends`` (tiny n): every backend row is measured, the
embedders are timed apart, the files are written, and the caps are honoured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mars_core.bench.backends import BACKENDS, run_backends
from mars_core.errors import ConfigError

pytest.importorskip("chromadb")
pytest.importorskip("qdrant_client")


def test_smoke_run_measures_every_backend_and_writes_files(tmp_path: Path) -> None:
    result = run_backends(sizes=(120, 300), out=tmp_path / "out", quick=True,
                          qdrant_cap=200, workdir=tmp_path)
    rows = {(r["backend"], r["n"]) for r in result["rows"]}
    expected = {(b, n) for b in BACKENDS for n in (120, 300)
                if not (b.startswith("qdrant") and n > 200)}
    assert rows == expected
    assert {(s["backend"], s["n"]) for s in result["skipped"]} == {
        ("qdrant-memory", 300), ("qdrant-path", 300)}
    for r in result["rows"]:
        assert r["bulk_add_per_s"] > 0
        assert r["single_add"]["count"] == 20
        for key in ("query", "query_filtered"):
            assert 0 < r[key]["median_ms"] <= r[key]["p99_ms"]
            assert r[key]["count"] == 20 and not r[key]["capped"]
    names = [e["embedder"] for e in result["embedders"]]
    assert names[0] == "hashing-v1-384-c3" and all(
        e["sentences_per_s"] > 0 and e["sentences"] == 16 for e in result["embedders"])
    saved = json.loads((tmp_path / "out" / "backends.json").read_text())
    assert saved["rows"] == json.loads(json.dumps(result["rows"]))
    table = (tmp_path / "out" / "backends.md").read_text()
    assert table.count("| chroma-persistent |") == 2
    assert "skipped qdrant-path at n=300" in table


def test_unknown_backend_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown backend"):
        run_backends(sizes=(10,), backends=("sqlite",), quick=True, workdir=tmp_path)
