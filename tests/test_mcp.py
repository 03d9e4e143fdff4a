"""``mars mcp``: the MCP server, driven by the SDK's own client — in process, over stdio
(a real ``python -m mars_core.cli mcp`` subprocess) and over streamable HTTP.

Every tool, the namespace resource, one namespace per server and never another, and
bad tool arguments answered with MCP tool errors that change nothing."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters

from mars_core import MemoryStore
from mars_core.errors import ExtraNotInstalledError
from mars_core.mcp_server import READ_TOOLS, build_server, namespace_uri
from mars_core.tools import TOOL_NAMES

ROOT = Path(__file__).resolve().parents[1]
ENV = {"PYTHONPATH": str(ROOT), "MARS_EMBEDDER": "hashing",
       "MARS_KEY_DIR": os.environ["MARS_KEY_DIR"]}


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


@contextlib.asynccontextmanager
async def connected(store: MemoryStore, **kw: Any) -> AsyncIterator[Client]:
    async with Client(build_server(store, **kw)) as client:
        yield client


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    with MemoryStore(budget=2000, allow_sync_in_loop=True) as s:  # the test reads it too
        s.add("Bo keeps bees in Porto", type="semantic", namespace="bo")
        yield s


async def test_the_tools_remember_recall_search_forget_explain_and_erase(
        store: MemoryStore) -> None:
    async with connected(store, namespace="ana") as client:
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == list(TOOL_NAMES)
        erase_tool = next(t for t in listed.tools if t.name == "erase")
        assert erase_tool.annotations is not None and erase_tool.annotations.destructive_hint

        done = await client.call_tool("remember", {"content": "Ana prefers window seats"})
        assert not done.is_error and text(done).startswith("Remembered (id=")
        seat = text(done).split("id=")[1].rstrip(").")
        await client.call_tool("remember", {"content": "Ana's sister Ines lives in Faro",
                                            "memory_type": "social"})
        recalled = await client.call_tool("recall", {"query": "Which seats does Ana like?"})
        assert "Ana prefers window seats" in text(recalled)
        found = await client.call_tool("search", {"query": "window seats", "k": 1})
        assert text(found) == f"- [{seat}] (semantic) Ana prefers window seats"

        why = await client.call_tool("explain", {"memory_id": seat})
        assert not why.is_error and why.structured_content is not None
        assert why.structured_content["status"] == "active"
        assert why.structured_content["events"][0]["op"] == "insert"
        assert "window" not in json.dumps(why.structured_content)  # no text

        assert text(await client.call_tool("forget", {"memory_id": seat})) == \
            f"Forgot {seat}."
        assert store.get(seat, namespace="ana").status.value == "archived"

        receipt = await client.call_tool("erase", {"entity": "Ines"})
        assert not receipt.is_error and receipt.structured_content is not None
        assert receipt.structured_content["request"] == "entity"
        assert len(receipt.structured_content["erased"]) == 1
        assert "Faro" not in json.dumps(receipt.structured_content)
    assert [n.content for n in store.list("ana")] == []
    assert [n.content for n in store.list("bo")] == ["Bo keeps bees in Porto"]  # untouched


async def test_one_namespace_per_server_and_never_another(store: MemoryStore) -> None:
    [bees] = store.list("bo")
    async with connected(store, namespace=("users", "ana")) as client:
        found = await client.call_tool("search", {"query": "Who keeps bees in Porto?"})
        assert text(found) == "No memories found."
        for tool in ("explain", "forget"):
            refused = await client.call_tool(tool, {"memory_id": bees.id})
            assert refused.is_error and "no memory with id" in text(refused)
        refused = await client.call_tool("erase", {"memory_id": bees.id})
        assert refused.is_error
        await client.call_tool("remember", {"content": "Ana likes jazz"})
        # an argument no tool takes is ignored (the SDK's rule): never a way out
        sneaky = await client.call_tool("remember", {"content": "Bo sells honey",
                                                     "namespace": "bo"})
        assert not sneaky.is_error

        resources = (await client.list_resources()).resources
        assert [str(r.uri) for r in resources] == [namespace_uri("users/ana")]
        shown = await client.read_resource(namespace_uri("users/ana"))
        view = json.loads(shown.contents[0].text)  # type: ignore[union-attr]
        assert view["namespace"] == "users/ana" and view["occupancy"]["active"] == 2
        assert "jazz" not in shown.contents[0].text  # type: ignore[union-attr]
        with pytest.raises(Exception, match="Unknown resource"):
            await client.read_resource(namespace_uri("bo"))
    assert store.get(bees.id, namespace="bo").status.value == "active"
    assert [n.content for n in store.list(("users", "ana"))] == ["Ana likes jazz",
                                                                 "Bo sells honey"]
    assert [n.content for n in store.list("bo")] == ["Bo keeps bees in Porto"]


BAD_CALLS = [
    ("remember", {}),  # content is required
    ("remember", {"content": 5}),
    ("remember", {"content": ""}),
    ("remember", {"content": "x", "memory_type": "gossip"}),
    ("recall", {"query": ["a", "list"]}),
    ("search", {"query": "bees", "k": 0}),
    ("search", {"query": "bees", "k": "three"}),
    ("search", {"query": "bees", "k": 10**6}),
    ("forget", {"memory_id": "not-an-id"}),
    ("erase", {}),  # neither a memory nor a person: never the whole namespace
    ("erase", {"memory_id": "x", "entity": "Bo"}),
    ("explain", {"memory_id": None}),
    ("no_such_tool", {"x": 1}),
]


@pytest.mark.parametrize(("tool", "arguments"), BAD_CALLS,
                         ids=[f"{t}-{i}" for i, (t, _) in enumerate(BAD_CALLS)])
async def test_bad_arguments_are_tool_errors_that_change_nothing(
        store: MemoryStore, tool: str, arguments: dict[str, Any]) -> None:
    before = store.export_jsonld()
    async with connected(store, namespace="bo") as client:
        result = await client.call_tool(tool, arguments)
        assert result.is_error and text(result)
        after = await client.call_tool("search", {"query": "bees"})  # the server goes on
        assert "Bo keeps bees in Porto" in text(after)
    now = store.export_jsonld()
    assert [n["content"] for n in now["@graph"] if "content" in n] == \
        [n["content"] for n in before["@graph"] if "content" in n]


async def test_a_read_only_server_serves_only_the_reading_tools(store: MemoryStore) -> None:
    async with connected(store, namespace="bo", read_only=True) as client:
        assert [t.name for t in (await client.list_tools()).tools] == list(READ_TOOLS)
        refused = await client.call_tool("remember", {"content": "x"})
        assert refused.is_error and "Unknown tool" in text(refused)
        assert "bees" in text(await client.call_tool("recall", {"query": "bees"}))


def test_without_the_extra_the_error_names_it(store: MemoryStore,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "mcp" or m.startswith("mcp.")]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ExtraNotInstalledError, match=r"mars-memory\[mcp\]"):
        build_server(store)
    from typer.testing import CliRunner

    from mars_core.cli import app

    result = CliRunner().invoke(app, ["mcp", "--path", "unused"])
    assert result.exit_code == 1 and "mars-memory[mcp]" in result.output
    assert not Path("unused").exists()  # refused before a store was created


# --- real transports ---------------------------------------------------------------------


async def test_over_stdio_a_client_starts_mars_mcp_itself(tmp_path: Path) -> None:
    path = tmp_path / "store"
    params = StdioServerParameters(
        command=sys.executable, env=ENV, cwd=str(tmp_path),
        args=["-m", "mars_core.cli", "mcp", "--path", str(path), "--namespace", "ana"])
    async with Client(params) as client:
        assert {t.name for t in (await client.list_tools()).tools} == set(TOOL_NAMES)
        done = await client.call_tool("remember", {"content": "Ana flies to Oslo on Friday"})
        assert not done.is_error, text(done)
        recalled = await client.call_tool("recall", {"query": "When does Ana fly?"})
        assert "Ana flies to Oslo on Friday" in text(recalled)
        bad = await client.call_tool("search", {"query": "Oslo", "k": -1})
        assert bad.is_error
        assert "Oslo" in text(await client.call_tool("search", {"query": "Oslo"}))
    with MemoryStore.open(path, allow_sync_in_loop=True) as store:  # the server and its lock
        # have gone
        assert [n.content for n in store.list("ana")] == ["Ana flies to Oslo on Friday"]
        assert store.list() == [] and store.verify().ok


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_over_streamable_http_on_localhost(tmp_path: Path) -> None:
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "mars_core.cli", "mcp", "--path", str(tmp_path / "s"),
         "--namespace", "ana", "--transport", "http", "--port", str(port)],
        env={**os.environ, **ENV}, cwd=tmp_path, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None  # the server says where once it is listening
        said = server.stderr.readline()
        assert said == f"serving memory at http://127.0.0.1:{port}/mcp\n", \
            said + server.communicate()[1]
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            await client.call_tool("remember", {"content": "Ana drinks green tea"})
            found = await client.call_tool("search", {"query": "What does Ana drink?"})
            assert "Ana drinks green tea" in text(found)
    finally:
        server.terminate()
        server.communicate(timeout=30)
    with MemoryStore.open(tmp_path / "s", allow_sync_in_loop=True) as store:
        assert [n.content for n in store.list("ana")] == ["Ana drinks green tea"]


def test_a_taken_port_is_a_typed_error(tmp_path: Path) -> None:
    from mars_core.errors import StorageUnavailableError
    from mars_core.mcp_server import serve

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        with pytest.raises(StorageUnavailableError, match=f"cannot listen on 127.0.0.1:{port}"):
            serve(tmp_path / "s", transport="http", port=port, index="numpy")
    with MemoryStore.open(tmp_path / "s") as store:  # the store was closed, nothing written
        assert store.list() == []
