"""Smoke run of ``mars bench backends`` (tiny n): every backend row is measured (Chroma
over HTTP against a ``chroma run`` server the bench starts and stops), the embedders
and the store level are timed apart, the files are written, and the caps are honoured."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from mars_core.bench.backends import BACKENDS, run_backends
from mars_core.bench.chroma_server import chroma_cli, chroma_server
from mars_core.errors import ConfigError, MarsBackendError

pytest.importorskip("chromadb")
pytest.importorskip("qdrant_client")
if chroma_cli() is None:
    pytest.skip("the `chroma` CLI is not installed next to this Python", allow_module_level=True)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def test_smoke_run_measures_every_backend_and_writes_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHROMA_HOST", raising=False)
    assert "chroma-http" in BACKENDS
    result = run_backends(sizes=(60,), out=tmp_path / "out", quick=True, queries=8,
                          singles=5, workdir=tmp_path, embedders=False, store_n=30,
                          store_ops=4)
    assert [(r["backend"], r["n"]) for r in result["rows"]] == [(b, 60) for b in BACKENDS]
    assert result["skipped"] == [] and result["embedders"] == []
    for r in result["rows"]:
        assert r["bulk_add_per_s"] > 0
        assert r["single_add"]["count"] == 5
        for key in ("query", "query_filtered"):
            assert 0 < r[key]["median_ms"] <= r[key]["p99_ms"]
            assert r[key]["count"] == 8 and not r[key]["capped"]
    servers = [r["server"] for r in result["rows"] + result["stores"]
               if r["backend"] == "chroma-http"]
    assert len(servers) == 2 and all(s.startswith("http://127.0.0.1:") for s in servers)
    assert not any(_answers(s) for s in servers)  # each was stopped after its row
    assert [s["backend"] for s in result["stores"]] == list(BACKENDS)
    for s in result["stores"]:
        assert s["n"] == 30 and s["import_per_s"] > 0
        for key in ("add", "retrieve", "retrieve_access"):
            assert s[key]["count"] == 4 and 0 < s[key]["median_ms"] <= s[key]["p99_ms"]
    saved = json.loads((tmp_path / "out" / "backends.json").read_text())
    assert saved["rows"] == json.loads(json.dumps(result["rows"]))
    table = (tmp_path / "out" / "backends.md").read_text()
    assert table.count("| chroma-http |") == 2  # the row and the store level


def test_caps_skip_bigger_sizes_saying_why_and_embedders_are_timed_apart(
        tmp_path: Path) -> None:
    result = run_backends(sizes=(40, 90), backends=("inmemory", "qdrant-path"),
                          out=tmp_path / "out", quick=True, queries=3, singles=3,
                          caps={"qdrant-path": 50}, workdir=tmp_path, store_n=0)
    assert [(r["backend"], r["n"]) for r in result["rows"]] == [
        ("inmemory", 40), ("inmemory", 90), ("qdrant-path", 40)]
    [skip] = result["skipped"]
    assert (skip["backend"], skip["n"]) == ("qdrant-path", 90)
    assert skip["why"].startswith("capped at 50: ") and "SQLite" in skip["why"]
    table = (tmp_path / "out" / "backends.md").read_text()
    assert "skipped qdrant-path at n=90: capped at 50" in table and "Store level" not in table
    names = [e["embedder"] for e in result["embedders"]]
    assert names[0] == "hashing-v1-384-c3" and all(
        e["sentences_per_s"] > 0 and e["sentences"] == 16 and e["single"]["count"] == 16
        for e in result["embedders"])


def test_chroma_http_uses_the_server_chroma_host_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with chroma_server(tmp_path) as server:
        monkeypatch.setenv("CHROMA_HOST", server.host)
        monkeypatch.setenv("CHROMA_PORT", str(server.port))
        result = run_backends(sizes=(40,), backends=("chroma-http",), quick=True, queries=5,
                              singles=3, embedders=False, store_n=0, workdir=tmp_path)
        assert _answers(server.url)  # the bench left the user's server running
    [row] = result["rows"]
    assert row["server"] == "CHROMA_HOST" and row["query"]["count"] == 5
    assert result["settings"]["chroma_http"] == "CHROMA_HOST"


def _servers_on(path: Path) -> list[str]:
    """Command lines of the running processes serving ``path`` (from /proc)."""
    found = []
    for cmd in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmd.read_bytes().split(b"\0")
        except OSError:  # the process ended while we looked
            continue
        if str(path).encode() in args:
            found.append(b" ".join(args).decode(errors="replace"))
    return found


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs /proc")
def test_a_server_that_does_not_answer_in_time_is_an_error_and_is_stopped(
        tmp_path: Path) -> None:
    with pytest.raises(MarsBackendError, match="did not answer its heartbeat"), \
            chroma_server(tmp_path, timeout=0):
        pass  # pragma: no cover - never entered
    assert _servers_on(tmp_path / "data") == []


@pytest.mark.parametrize("kwargs", [{"backends": ("sqlite",)}, {"sizes": (0,)},
                                    {"sizes": ()}])
def test_bad_arguments_are_config_errors(tmp_path: Path, kwargs: dict[str, object]) -> None:
    args: dict[str, object] = {"sizes": (10,), "quick": True, "workdir": tmp_path,
                               "embedders": False, "store_n": 0, **kwargs}
    with pytest.raises(ConfigError):
        run_backends(**args)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []
