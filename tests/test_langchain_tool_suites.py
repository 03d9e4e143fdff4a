"""``langchain-tests``' standard tool suites on the memory tools (issue 21, item 10).

Each of ``remember``, ``recall`` and ``forget`` (:func:`langchain_mars.tools.memory_tools`)
runs :class:`~langchain_tests.unit_tests.ToolsUnitTests` and
:class:`~langchain_tests.integration_tests.ToolsIntegrationTests` (sync and async
invocation, with and without a ``ToolCall``) over a real in-memory store with the
hashing embedder — no network. Every test gets its own store, with one memory in it so
that ``recall`` finds something and ``forget`` has a real id to forget; after the suite
the test checks the store says what the calls did.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.tools import BaseTool
from langchain_tests.integration_tests import ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests

from langchain_mars.tools import memory_tools
from mars_core import FakeClock, HashingEmbedder, MemoryStore
from mars_core.model import MemoryNode

NAMESPACE = ("memories", "ana")
FACT = "Ana's flight to Lisbon is on Friday"


def _example(tool_name: str, fact: MemoryNode) -> dict[str, Any]:
    """The arguments of one example call of each tool."""
    return {"remember": {"content": "Ana prefers the window seat", "memory_type": "semantic"},
            "recall": {"query": "When is Ana's flight?"},
            "forget": {"memory_id": fact.id}}[tool_name]


def _fresh(tool_name: str) -> tuple[MemoryStore, MemoryNode, BaseTool]:
    """A store holding one fact, and one memory tool over it."""
    store = MemoryStore(budget=2000, embedder=HashingEmbedder(), clock=FakeClock())
    fact = store.add(FACT, type="semantic", namespace=NAMESPACE)
    [tool] = memory_tools(store, namespace=NAMESPACE, include=(tool_name,))
    return store, fact, tool


class _MemoryTool:
    """One memory tool over a fresh store per test (``tool_name`` picks it)."""

    tool_name: str
    store: MemoryStore
    fact: MemoryNode
    built: BaseTool

    @pytest.fixture(autouse=True)
    def _fresh_store(self) -> Iterator[None]:
        self.store, self.fact, self.built = _fresh(self.tool_name)
        yield
        self.store.close()

    @property
    def tool_constructor(self) -> BaseTool:
        return self.built

    @property
    def tool_constructor_params(self) -> dict[str, Any]:
        return {}  # an instance: langchain-tests requires no parameters then

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return _example(self.tool_name, self.fact)


class TestRememberUnit(_MemoryTool, ToolsUnitTests):
    tool_name = "remember"


class TestRememberIntegration(_MemoryTool, ToolsIntegrationTests):
    tool_name = "remember"


class TestRecallUnit(_MemoryTool, ToolsUnitTests):
    tool_name = "recall"


class TestRecallIntegration(_MemoryTool, ToolsIntegrationTests):
    tool_name = "recall"


class TestForgetUnit(_MemoryTool, ToolsUnitTests):
    tool_name = "forget"


class TestForgetIntegration(_MemoryTool, ToolsIntegrationTests):
    tool_name = "forget"


# --- what the standard calls did to the store (the suites only check the reply's shape) ---


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
@pytest.mark.parametrize("tool_name", ["remember", "recall", "forget"])
def test_the_suites_example_calls_act_on_the_store(tool_name: str, mode: str) -> None:
    store, fact, tool = _fresh(tool_name)
    call = {"name": tool.name, "args": _example(tool_name, fact), "id": "call-1",
            "type": "tool_call"}
    try:
        message = tool.invoke(call) if mode == "invoke" else asyncio.run(tool.ainvoke(call))
        assert message.type == "tool" and message.tool_call_id == "call-1"
        assert message.status == "success", message.content
        texts = [n.content for n in store.list(NAMESPACE)]
        if tool_name == "remember":
            assert texts == [FACT, "Ana prefers the window seat"]
            assert message.content.startswith("Remembered (id=")
        elif tool_name == "recall":
            assert texts == [FACT] and message.content == f"- [{fact.id}] (semantic) {FACT}"
        else:
            assert texts == [] and message.content == f"Forgot {fact.id}."
            assert not store.get(fact.id, namespace=NAMESPACE).is_active
    finally:
        store.close()
