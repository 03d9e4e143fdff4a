"""The ``mars`` command line on real store directories (typer's runner, real files)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mars_core import MemoryStore
from mars_core.cli import app, main
from mars_core.model import MemoryStatus

runner = CliRunner()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    with MemoryStore.open(path, budget=400) as store:
        store.observe("user", "My sister Ana lives in Lisbon. My email is ana@example.com.")
        store.observe("user", "I am allergic to peanuts.")
    return path


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_help_lists_every_command() -> None:
    code, out = run("--help")
    assert code == 0
    for cmd in ("demo", "inspect", "explain", "erase", "export", "import", "verify", "bench"):
        assert cmd in out
    code, out = run("bench", "--help")
    assert code == 0 and "policies" in out and "leakage" in out


def test_command_summaries_are_not_broken_at_the_docstring_line_ends() -> None:
    """A docstring's first paragraph wraps in the source; the command list rewraps it to
    the terminal instead of keeping the source's line ends (typer's "rich" mode kept them)."""
    wide = CliRunner(env={"COLUMNS": "200"})
    out = wide.invoke(app, ["--help"], catch_exceptions=False).output
    assert "show what is remembered, decayed, summarised" in out  # two lines in demo()


def test_every_command_and_option_explains_itself() -> None:
    import typer.main

    todo: list[tuple[list[str], Any]] = [([], typer.main.get_command(app))]
    seen = 0
    while todo:
        words, cmd = todo.pop()
        if hasattr(cmd, "commands"):  # a group (typer vendors its own click)
            todo += [([*words, name], sub) for name, sub in cmd.commands.items()]
            continue
        seen += 1
        assert (cmd.help or "").strip(), words  # the docstring typer shows
        for param in cmd.params:
            if param.name != "help":
                assert (getattr(param, "help", None) or "").strip(), (words, param.name)
        code, out = run(*words, "--help")
        assert code == 0 and "Usage" in out, words
    assert seen >= 18  # 10 store commands + 8 benchmarks
    code, out = run("--help")
    assert "$MARS_PATH" in out and "mars demo" in out  # where the store is, where to start


def test_inspect_shows_a_redacted_table(store_path: Path) -> None:
    code, out = run("inspect", "--path", str(store_path))
    assert code == 0
    assert "episodic" in out and "semantic" in out and "tier" in out
    assert "ana@example.com" not in out
    assert "peanuts" in out


def test_missing_store_path_says_what_to_do(tmp_path: Path) -> None:
    code, out = run("inspect", "--path", str(tmp_path / "nope"))
    assert code == 2
    assert "no store at" in out and "mars demo" in out
    assert not (tmp_path / "nope").exists()  # a read never creates a store


@pytest.mark.parametrize("command", ["stats", "verify", "inspect"])
def test_a_directory_of_other_files_is_not_a_store(tmp_path: Path, command: str) -> None:
    (tmp_path / "notes.txt").write_text("my own files")
    code, out = run(command, "--path", str(tmp_path))
    assert code == 2 and "no store at" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]  # nothing created
    (tmp_path / "qdrant").mkdir()  # a folder of that name, but no store in it
    code, out = run(command, "--path", str(tmp_path))
    assert code == 2 and "no store at" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "qdrant"]
    (tmp_path / "qdrant" / "meta.json").write_text("{}")  # a store of mars-memory 0.1
    code, out = run(command, "--path", str(tmp_path))
    assert code == 1 and "mars-memory 0.1" in out and "mars export" in out


def test_explain_by_prefix_and_bad_ids(store_path: Path) -> None:
    with MemoryStore.open(store_path) as store:
        node = store.list()[0]
    code, out = run("explain", node.id[:8], "--path", str(store_path))
    assert code == 0 and node.id in out and "insert" in out
    code, out = run("explain", "ffffffff", "--path", str(store_path))
    assert code == 2 and "no memory with an id starting" in out and "mars inspect" in out
    code, out = run("explain", "ab", "--path", str(store_path))
    assert code == 2 and "too short" in out


def test_erase_entity_prints_receipt_and_removes_text(store_path: Path, tmp_path: Path) -> None:
    code, out = run("erase", "--entity", "Ana", "--path", str(store_path), "--yes")
    assert code == 0 and "erasure (entity)" in out
    export = tmp_path / "out.jsonld"
    code, _ = run("export", str(export), "--path", str(store_path))
    assert code == 0
    assert "Lisbon" not in export.read_text() and "peanuts" in export.read_text()


def test_erase_needs_exactly_one_selector(store_path: Path) -> None:
    with MemoryStore.open(store_path) as store:
        before = store.export_jsonld()
    code, out = run("erase", "--path", str(store_path), "--yes")
    assert code == 2 and "exactly one" in out
    code, out = run("erase", "--id", "x", "--entity", "Ana", "--path", str(store_path), "--yes")
    assert code == 2
    with MemoryStore.open(store_path) as store:
        assert store.export_jsonld() == before  # nothing changed


def test_verify_and_stats(store_path: Path) -> None:
    code, out = run("verify", "--path", str(store_path))
    assert code == 0 and "audit chain ok" in out
    code, out = run("stats", "--path", str(store_path))
    assert code == 0 and json.loads(out)["namespaces"]["default"]["active"] >= 3


def test_export_import_roundtrip(store_path: Path, tmp_path: Path) -> None:
    export = tmp_path / "out.jsonld"
    assert run("export", str(export), "--path", str(store_path))[0] == 0
    target = tmp_path / "copy"
    code, out = run("import", str(export), "--path", str(target))
    assert code == 0 and "imported" in out
    with MemoryStore.open(store_path) as a, MemoryStore.open(target) as b:
        assert [n.content for n in a.list()] == [n.content for n in b.list()]


def test_import_mem0_and_langgraph_dumps(tmp_path: Path) -> None:
    mem0 = tmp_path / "mem0.json"
    mem0.write_text(json.dumps({"results": [
        {"id": "a", "memory": "Likes green tea", "user_id": "bo"},
        {"id": "b", "memory": "Works at a bakery", "user_id": "bo"}]}))
    lg = tmp_path / "lg.json"
    lg.write_text(json.dumps([{"namespace": ["memories", "bo"], "key": "k1",
                               "value": {"content": "Has a dog named Rex"}}]))
    target = tmp_path / "store"
    assert run("import", str(mem0), "--from", "mem0", "--path", str(target))[0] == 0
    assert run("import", str(lg), "--from", "langgraph", "--path", str(target))[0] == 0
    with MemoryStore.open(target) as store:
        assert sorted(n.content for n in store.list("bo")) == [
            "Likes green tea", "Works at a bakery"]
        [dog] = store.list("memories/bo")
        assert dog.provenance.source == "import" and dog.metadata["key"] == "k1"


def test_bad_import_changes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"results": [{"id": "a", "memory": "fine", "user_id": "bo"},
                                           {"id": "b", "user_id": "bo"}]}))
    target = tmp_path / "store"
    code, out = run("import", str(bad), "--from", "mem0", "--path", str(target))
    assert code == 2 and "record 1" in out
    assert not target.exists()  # the store it had created is gone again
    code, out = run("import", str(tmp_path / "none.json"), "--path", str(target))
    assert code == 2 and "no file" in out
    code, out = run("import", str(bad), "--from", "zep", "--path", str(target))
    assert code == 2 and "unknown import kind" in out and "mem0" in out
    assert not target.exists()  # refused before opening anything


def test_failed_import_removes_only_what_it_created(tmp_path: Path, store_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"namespace": ["memories", "bo"], "key": "k1",
                                "value": {"content": "Has a dog"}},
                               {"namespace": ["memories", "bo"], "value": {"content": "x"}}]))
    nested = tmp_path / "new" / "deeper" / "store"
    code, out = run("import", str(bad), "--from", "langgraph", "--path", str(nested))
    assert code == 2 and "item 1" in out and "was removed again" in out
    assert not (tmp_path / "new").exists()  # every directory the open made, and only those
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out = run("import", str(bad), "--from", "langgraph", "--path", str(empty))
    assert code == 2 and "was removed again" in out
    assert empty.is_dir() and not any(empty.iterdir())  # it was there before: kept, emptied
    with MemoryStore.open(store_path) as store:
        before = store.export_jsonld()
    code, out = run("import", str(bad), "--from", "langgraph", "--path", str(store_path))
    assert code == 2 and "item 1" in out and "removed" not in out
    with MemoryStore.open(store_path) as store:  # an existing store is never removed
        assert store.export_jsonld() == before


def test_inspect_of_an_empty_namespace_names_the_others(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with MemoryStore.open(path, budget=400) as store:
        store.add("Likes green tea", namespace="alice")
        store.add("Works at a bakery", namespace="bob")
    code, out = run("inspect", "--path", str(path), "-n", "carol")
    assert code == 0 and "'carol' holds no memories" in out
    assert "alice, bob" in out and f"mars inspect --path {path} -n alice" in out
    code, out = run("inspect", "--path", str(path))  # the default namespace is empty here
    assert code == 0 and "default namespace 'default' holds no memories" in out
    assert "alice, bob" in out
    code, out = run("inspect", "--path", str(path), "-n", "alice")
    assert code == 0 and "Likes" in out and "bakery" not in out and "holds no" not in out
    code, out = run("inspect", "--path", str(path), "-n", "alice", "--status", "archived")
    assert code == 0 and "0 archived memories" in out  # a known namespace: no hint


def test_main_returns_exit_codes(tmp_path: Path) -> None:
    assert main(["inspect", "--path", str(tmp_path / "nope")]) == 2
    assert main(["--help"]) == 0
    assert main(["no-such-command"]) == 2


def test_console_script_runs() -> None:
    out = subprocess.run([sys.executable, "-m", "mars_core.cli", "--help"],
                         capture_output=True, text=True, check=True)
    assert "Usage" in out.stdout


def test_reembed_moves_the_store_to_another_embedder(store_path: Path) -> None:
    from mars_core import HashingEmbedder

    with MemoryStore.open(store_path) as store:
        before = store.stats()["embedder"]
        contents = sorted(n.content for n in store.list())
    assert before == HashingEmbedder().name  # the test run's embedder (MARS_EMBEDDER)
    code, out = run("reembed", "--embedder", "semantic", "--path", str(store_path))
    assert code == 0 and "re-embedded" in out
    with MemoryStore.open(store_path) as store:  # reopens with the manifest's new embedder
        assert store.stats()["embedder"] != before
        assert sorted(n.content for n in store.list()) == contents
    code, out = run("reembed", "--embedder", "nope", "--path", str(store_path))
    assert code == 2 and "--embedder must be" in out


def test_reindex_rebuilds_a_lost_index_from_the_records(store_path: Path) -> None:
    import shutil

    with MemoryStore.open(store_path) as store:
        held = len(store.list(status=None))
        index = store.stats()["index"]
    shutil.rmtree(store_path / "index", ignore_errors=True)
    code, out = run("reindex", "--path", str(store_path))
    assert code == 0 and f"rebuilt the {index} index" in out and f": {held} entries" in out
    with MemoryStore.open(store_path) as store:
        first = store.list()[0]
        assert store.retrieve(first.content, read_only=True)[0].id == first.id


def test_writing_commands_reach_a_server_index_named_by_index(
        tmp_path: Path, chroma_server: Any) -> None:
    """A store whose index is a server: `--index chroma://HOST:PORT` reaches it; the path
    alone is refused (it cannot name the server), and a bad `--index` is explained."""
    from mars_core.index.chroma import ChromaIndex

    path = tmp_path / "store"
    server = f"chroma://{chroma_server.host}:{chroma_server.port}"
    with MemoryStore.open(path, index=ChromaIndex(host=chroma_server.host,
                                                  port=chroma_server.port)) as store:
        store.add("the octopus tastes with its arms")
        store.add("the octopus has three hearts")
    code, out = run("reindex", "--path", str(path))
    assert code == 2 and "index is a chroma server" in out and "--index" in out
    assert not (path / "index").exists()  # no embedded index was built instead
    code, out = run("reindex", "--path", str(path), "--index", server)
    assert code == 0 and "rebuilt the chroma index" in out and ": 2 entries" in out
    assert not (path / "index").exists()
    for bad in ("chroma://", "http://localhost:1", "sqlite"):
        code, out = run("reindex", "--path", str(path), "--index", bad)
        assert code == 2 and ("--index" in out or "index must be one of" in out), out
    code, out = run("erase", "--path", str(path), "--index", server, "--yes",
                    "--namespace", "default")
    assert code == 0 and "erased" in out.lower(), out
    index = ChromaIndex(host=chroma_server.host, port=chroma_server.port)
    with MemoryStore.open(path, index=index) as store:
        assert store.list(status=None) == []
        probe = store.embedder.embed(["the octopus"])[0]
        assert index.query("default", MemoryStatus.ACTIVE, probe, 5) == []
