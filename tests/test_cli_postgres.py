"""The ``mars`` commands on a store named by a ``postgresql://`` URL, on a real server:
every command that takes ``--path`` (and ``--index``) takes the URL as ``MemoryStore.open``
does, a URL without a store is refused without creating one, a failed import into a new
store takes it off again, and no message shows the password."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from typer.testing import CliRunner

from mars_core import MemoryStore
from mars_core.cli import app
from mars_core.clock import FakeClock
from mars_core.storage import postgres as pg

runner = CliRunner()
SECRET = "s3cret-pw"


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = runner.invoke(app, list(args), catch_exceptions=False, env=env)
    return result.exit_code, result.output


@pytest.fixture
def url(postgres_url: str) -> str:
    """The test's store URL with a password in it (the test server trusts its local
    clients, so it is never checked: it must only never be shown)."""
    parts = urlsplit(postgres_url)
    if parts.password or not parts.username:
        pytest.skip("the test server's URL has a password of its own, or no user name")
    user, rest = parts.netloc.split("@", 1)
    return urlunsplit(parts._replace(netloc=f"{user}:{SECRET}@{rest}"))


@pytest.fixture
def filled(url: str) -> str:
    with MemoryStore.open(url, budget=400, clock=FakeClock()) as store:
        store.observe("user", "My sister Ana lives in Lisbon. My email is ana@example.com.")
        store.observe("user", "I am allergic to peanuts.", namespace="users/bo")
    return url


def test_the_url_has_a_password_to_hide(url: str) -> None:
    assert SECRET in url and SECRET not in pg.shown_url(url)[0]


def test_reading_commands_on_a_url(filled: str, tmp_path: Path) -> None:
    code, out = run("stats", "--path", filled)
    assert code == 0, out
    stats = json.loads(out)
    assert stats["records"] == "postgresql" and stats["namespaces"]["users/bo"]["active"] >= 1
    code, out = run("inspect", "--path", filled, "-n", "users/bo")
    assert code == 0 and "peanuts" in out and SECRET not in out
    code, out = run("inspect", "--path", filled, "-n", "users/nobody")
    assert code == 0 and "users/bo" in out and SECRET not in out
    with MemoryStore.open(filled) as store:
        node = store.list("users/bo")[0]
    code, out = run("explain", node.id[:8], "--path", filled)
    assert code == 0 and node.id in out
    code, out = run("verify", "--path", filled)
    assert code == 0 and "audit chain ok" in out
    head = out.split("head: ")[1].split()[0]
    assert run("verify", "--path", filled, "--head", head)[0] == 0
    export = tmp_path / "out.jsonld"
    code, out = run("export", str(export), "--path", filled)
    assert code == 0 and SECRET not in out and "Lisbon" in export.read_text()
    code, out = run("stats", env={"MARS_PATH": filled})  # $MARS_PATH holds the URL
    assert code == 0 and json.loads(out)["records"] == "postgresql"


def test_writing_commands_on_a_url(filled: str, chroma_server: Any) -> None:
    code, out = run("erase", "--entity", "Ana", "--path", filled, "--yes")
    assert code == 0 and "erasure (entity)" in out and SECRET not in out
    with MemoryStore.open(filled) as store:
        assert not [n for n in store.list(status=None) if "Lisbon" in n.content]
    code, out = run("reindex", "--path", filled)
    assert code == 0 and "numpy index" in out and SECRET not in out
    index = (f"chroma://{chroma_server.host}:{chroma_server.port}"
             f"?prefix=t{uuid.uuid4().hex[:12]}_")
    code, out = run("reindex", "--path", filled, "--index", index)
    assert code == 0 and "chroma index" in out
    with MemoryStore.open(filled, index=index) as store:
        assert store.retrieve("peanuts", namespace="users/bo")[0].node.content.endswith(
            "peanuts.")
    code, out = run("reembed", "--path", filled, "--embedder", "hashing", "--index", index)
    assert code == 0 and "re-embedded" in out and SECRET not in out
    code, out = run("reindex", "--path", filled, "--index", "chroma")  # embedded: no place
    assert code == 2 and "has none" in out and SECRET not in out
    code, out = run("migrate", "--path", filled)
    assert code == 0 and "current" in out and SECRET not in out


def test_import_into_a_url(url: str, tmp_path: Path) -> None:
    mem0 = tmp_path / "mem0.json"
    mem0.write_text(json.dumps({"results": [
        {"id": "a", "memory": "Likes green tea", "user_id": "bo"},
        {"id": "b", "memory": "Works at a bakery", "user_id": "bo"}]}))
    code, out = run("import", str(mem0), "--from", "mem0", "--path", url)
    assert code == 0 and "imported 2 memories" in out and SECRET not in out
    with MemoryStore.open(url) as store:
        assert sorted(n.content for n in store.list("bo")) == [
            "Likes green tea", "Works at a bakery"]


def test_a_failed_import_takes_the_new_store_off_the_url_again(url: str,
                                                               tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"results": [{"id": "a", "memory": "fine", "user_id": "bo"},
                                           {"id": "b", "user_id": "bo"}]}))
    code, out = run("import", str(bad), "--from", "mem0", "--path", url)
    assert code == 2 and "record 1" in out and "was removed again" in out
    assert SECRET not in out and not pg.holds_store(url)
    with MemoryStore.open(url) as store:  # the next open creates a store anew
        store.add("first memory")
    code, out = run("import", str(bad), "--from", "mem0", "--path", url)
    assert code == 2 and "was removed again" not in out  # an existing store stays
    assert pg.holds_store(url)


@pytest.mark.parametrize("command", [
    ["stats"], ["inspect"], ["verify"], ["explain", "abcdef12"], ["export", "out.jsonld"],
    ["erase", "--namespace", "x", "--yes"], ["reindex"], ["reembed"]])
def test_a_url_without_a_store_is_refused_and_nothing_is_created(
        url: str, command: list[str], tmp_path: Path) -> None:
    code, out = run(*command, "--path", url)
    assert code == 2 and "no store at postgresql://" in out and "mars copy" in out
    assert SECRET not in out
    assert pg.schema_version(url) == 0 and not (tmp_path / "out.jsonld").exists()


def test_an_unreachable_server_and_the_demo(url: str) -> None:
    away = f"postgresql://mars:{SECRET}@127.0.0.1:1/agents"
    for command in (["stats"], ["erase", "--namespace", "x", "--yes"], ["migrate"]):
        code, out = run(*command, "--path", away)
        assert code == 1 and SECRET not in out and "127.0.0.1:1" in out  # unreachable: failed
    code, out = run("demo", "--path", url)
    assert code == 2 and "mars copy" in out and SECRET not in out
    assert pg.schema_version(url) == 0
