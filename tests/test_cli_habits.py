"""The command line's habits (issue 34, item 2): ``--version``, ``--json`` parsed back
against the schema docs/cli.md shows, plain progress lines when not a terminal, the
documented exit codes (0, 1, 2, 130), and an empty environment variable read as unset.

Real store directories, typer's runner and real ``python -m mars_core.cli`` processes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mars_core import MemoryStore, __version__
from mars_core.cli import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE, app, main

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    with MemoryStore.open(path, budget=400) as store:
        store.observe("user", "My sister Ana lives in Lisbon. My email is ana@example.com.")
        store.observe("user", "I am allergic to peanuts.")
    return path


def run(*args: str, **kw: Any) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), catch_exceptions=False, **kw)
    return result.exit_code, result.stdout, result.stderr


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m mars_core.cli ARGS`` in a real process, its output piped."""
    full = {**os.environ, "PYTHONPATH": str(ROOT), "MARS_EMBEDDER": "hashing", **(env or {})}
    return subprocess.run([sys.executable, "-m", "mars_core.cli", *args], capture_output=True,
                          text=True, env=full, timeout=120, check=False)


def documented() -> list[dict[str, Any]]:
    """The JSON examples of docs/cli.md's "JSON output" section, in order."""
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = page.split("## JSON output", 1)[1].split("\n## ", 1)[0]
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)\n```", section, re.S)]


def keys(value: Any) -> Any:
    """The shape of a JSON value: its keys, recursively (lists by their first item)."""
    if isinstance(value, dict):
        return {k: keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [keys(value[0])] if value else []
    return None


def same_shape(real: Any, doc: Any) -> bool:
    """Every key of the documented example is in the real output, and no other (lists
    are compared by their first item when both have one; an empty object stands for a
    mapping of any keys)."""
    if isinstance(doc, dict) and not doc:
        return isinstance(real, dict)
    if isinstance(doc, dict):
        return isinstance(real, dict) and real.keys() == doc.keys() and all(
            same_shape(real[k], doc[k]) for k in doc)
    if isinstance(doc, list) and doc and real:
        return same_shape(real[0], doc[0])
    return True


# --- --version ----------------------------------------------------------------------------


def test_version_prints_the_package_version() -> None:
    code, out, _ = run("--version")
    assert code == 0 and out.strip() == f"mars-memory {__version__}"
    done = cli("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"mars-memory {__version__}"


# --- --json -------------------------------------------------------------------------------


def test_every_reading_command_prints_json_in_the_documented_schema(store_path: Path) -> None:
    inspect_doc, explain_doc, erase_doc, verify_doc = documented()
    code, out, _ = run("inspect", "--path", str(store_path), "--json")
    assert code == 0
    listing = json.loads(out)
    assert same_shape(listing, inspect_doc), keys(listing)
    texts = [m["text"] for m in listing["memories"]]
    assert "ana@example.com" not in out and any("peanuts" in t for t in texts)
    assert listing["namespaces"] == ["default"] and len(listing["memories"]) >= 3
    code, out, _ = run("inspect", "--path", str(store_path), "--json", "--no-text")
    assert {m["text"] for m in json.loads(out)["memories"]} == {None}

    node = listing["memories"][-1]["id"]
    code, out, _ = run("explain", node[:8], "--path", str(store_path), "--json")
    account = json.loads(out)
    assert code == 0 and account["id"] == node and same_shape(account, explain_doc | {
        "derives_from": [], "derived": []}), keys(account)
    assert "peanuts" not in out and "Lisbon" not in out  # ids and rationales only

    code, out, _ = run("verify", "--path", str(store_path), "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] and report["checked"] > 0
    assert same_shape(report, verify_doc)

    code, out, _ = run("stats", "--path", str(store_path), "--json")
    assert code == 0 and len(out.strip().splitlines()) == 1
    assert json.loads(out)["namespaces"]["default"]["active"] >= 3

    code, out, err = run("erase", "--entity", "Ana", "--path", str(store_path), "--yes",
                         "--json")
    receipt = json.loads(out)
    assert code == 0 and receipt["request"] == "entity" and receipt["erased"]
    assert same_shape(receipt, erase_doc | {"regenerated": [], "ambiguous": [], "by_type": {}})
    assert "Lisbon" not in out and not err


def test_a_benchmark_summary_is_the_only_thing_on_standard_output(tmp_path: Path) -> None:
    done = cli("bench", "import", "--n", "5", "--reps", "1", "--embedders", "hashing",
               "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)  # the whole of standard output is the one object
    assert summary["n"] == 5 and summary["rows"][0]["stored"]["import"] == 5
    assert "| embedder |" in done.stderr  # the benchmark's own table went to stderr


# --- progress -----------------------------------------------------------------------------


def test_progress_is_plain_lines_when_standard_error_is_not_a_terminal(
        tmp_path: Path) -> None:
    dump = tmp_path / "mem0.json"
    dump.write_text(json.dumps({"results": [
        {"id": f"m{i}", "memory": f"fact {i} about the garden", "user_id": "bo"}
        for i in range(300)]}))
    done = cli("import", str(dump), "--from", "mem0", "--path", str(tmp_path / "s"),
               "--progress")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert "\r" not in done.stderr and "\x1b[" not in done.stderr  # no bar, no escapes
    storing = [line for line in lines if line.startswith("import: storing")]
    assert storing[0] == "import: storing 0/300 (0%)"
    assert storing[-1] == "import: storing 300/300 (100%)"
    assert 10 <= len(storing) <= 12  # a line per tenth, not one per record
    assert "import: committing 300/300 (100%)" in lines
    assert "imported 300 memories" in done.stdout
    quiet = cli("import", str(dump), "--from", "mem0", "--path", str(tmp_path / "t"))
    assert quiet.returncode == 0 and quiet.stderr == ""  # not asked: nothing


def test_progress_lines_are_flushed_one_by_one() -> None:
    from mars_core.progress import progress_lines

    class Stream:
        def __init__(self) -> None:
            self.lines: list[str] = []
            self.flushed = 0

        def write(self, text: str) -> int:
            self.lines.append(text)
            return len(text)

        def flush(self) -> None:
            self.flushed += 1

    stream = Stream()
    with progress_lines(stream, title="t") as bar:  # type: ignore[arg-type]
        for done in range(1001):
            bar("embed", done, 1000)
        bar("embed", 0, 5)  # the stage starts again (a second run)
    assert stream.flushed == len(stream.lines) == 12
    assert stream.lines[:2] == ["t: embedding 0/1000 (0%)\n", "t: embedding 100/1000 (10%)\n"]
    assert stream.lines[-1] == "t: embedding 0/5 (0%)\n"


# --- exit codes ---------------------------------------------------------------------------


def test_usage_errors_exit_2(store_path: Path) -> None:
    assert run("inspect", "--path", str(store_path), "--no-such-option")[0] == EXIT_USAGE
    code, _, err = run("inspect", "--path", str(store_path), "--status", "old")
    assert code == EXIT_USAGE and "status" in err
    code, out, err = run("explain", "ffffffff", "--path", str(store_path))
    assert code == EXIT_USAGE and "error:" in err and "error:" not in out  # to stderr
    assert main(["inspect", "--path", str(store_path.parent / "none")]) == EXIT_USAGE


def test_failures_exit_1(store_path: Path) -> None:
    with MemoryStore.open(store_path) as store:
        before = store.export_jsonld()
    code, _, err = run("erase", "--entity", "Ana", "--path", str(store_path), input="n\n")
    assert code == EXIT_FAILURE and "nothing erased" in err
    with MemoryStore.open(store_path) as store:
        assert store.export_jsonld() == before


def interrupt_at(stage: str) -> Callable[[str, int, int], None]:
    def progress(s: str, done: int, total: int) -> None:
        if s == stage and done > 0:
            raise KeyboardInterrupt
    return progress


def test_an_interrupted_command_exits_130_and_changes_nothing(
        tmp_path: Path, store_path: Path) -> None:
    dump = tmp_path / "mem0.json"
    dump.write_text(json.dumps({"results": [
        {"id": f"m{i}", "memory": f"fact {i}", "user_id": "bo"} for i in range(20)]}))
    with MemoryStore.open(store_path) as store:
        before = store.export_jsonld()
    argv = ["import", str(dump), "--from", "mem0", "--path", str(store_path)]
    assert main(argv, progress=interrupt_at("store")) == EXIT_INTERRUPTED
    assert main(["reindex", "--path", str(store_path)],
                progress=interrupt_at("index")) == EXIT_INTERRUPTED
    with MemoryStore.open(store_path) as store:
        assert store.export_jsonld() == before


# --- environment --------------------------------------------------------------------------


def test_an_empty_environment_variable_counts_as_unset(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mars_core.embedders import default_embedder
    from mars_core.keys import env_key

    monkeypatch.setenv("MARS_EMBEDDER", "")
    assert default_embedder().name == default_embedder("auto").name  # was a ConfigError
    monkeypatch.setenv("MARS_EMBEDDER", "hashing")
    with MemoryStore.open(tmp_path / "s") as store:
        store.add("a memory")
    monkeypatch.setenv("MARS_AUDIT_KEY", " ")
    assert env_key() is None
    monkeypatch.chdir(tmp_path)
    code, _, err = run("stats", env={"MARS_PATH": ""})
    assert code == EXIT_USAGE and "no store at mars_data" in err  # the default path
    code, out, _ = run("stats", "--json", env={"MARS_PATH": str(tmp_path / "s"),
                                               "MARS_INDEX": ""})
    assert code == 0 and json.loads(out)["namespaces"]["default"]["active"] == 1
