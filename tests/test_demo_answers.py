"""The demo's model answers only from the memory it was given (issue 21, item 8).

The demo (``make demo``) runs for real — create_agent, MarsMemoryMiddleware, a store on
disk, the hashing embedder — while a callback handler registered through LangChain's own
configure hooks records every chat-model call the demo makes: the messages the model
received and the text it answered. Every answer to a question must claim only what the
memory block of that very call holds, and forgetting a memory must take its claim away.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult
from langchain_core.tracers.context import register_configure_hook

from mars_core import demo
from mars_core.control.text import content_words
from mars_core.store import MemoryStore

# The answer's own frame: the only words an answer may add to its quotes.
FRAME = content_words("From memory: Nothing in the memories I was given answers that.")
_QUOTE = re.compile(r'"([^"]*)"')


@dataclass(frozen=True)
class Call:
    """One chat-model call: what the model received and what it answered."""

    messages: list[BaseMessage]
    answer: str

    @property
    def question(self) -> str:
        return [m.text for m in self.messages if m.type == "human"][-1]

    @property
    def memory_lines(self) -> list[str]:
        """The memory lines of the system messages (``- [tags] text``), as given."""
        return [line for m in self.messages if m.type == "system"
                for line in m.text.splitlines() if line.startswith("- [")]

    @property
    def memory_texts(self) -> set[str]:
        """The memory texts of those lines (what a quote may repeat)."""
        return {line.split("] ", 1)[1] for line in self.memory_lines}


class ModelCalls(BaseCallbackHandler):
    """Every chat-model call made while it is the current recorder."""

    def __init__(self) -> None:
        self.started: dict[UUID, list[BaseMessage]] = {}
        self.calls: list[Call] = []

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]],
                            *, run_id: UUID, **kwargs: Any) -> None:
        self.started[run_id] = list(messages[0])

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        self.calls.append(Call(self.started.pop(run_id), response.generations[0][0].text))

    def questions(self) -> list[Call]:
        return [c for c in self.calls if c.question.rstrip().endswith("?")]


_RECORDER: ContextVar[ModelCalls | None] = ContextVar("demo_model_calls", default=None)
register_configure_hook(_RECORDER, inheritable=True)  # LangChain adds it to every run


def _record() -> tuple[ModelCalls, Any]:
    calls = ModelCalls()
    return calls, _RECORDER.set(calls)


def unsupported(call: Call) -> set[str]:
    """Words of the answer that neither the call's memory block, its question nor the
    answer frame holds: claims that did not come from memory."""
    allowed = content_words("\n".join(call.memory_lines)) | content_words(call.question) | FRAME
    return content_words(call.answer) - allowed


@dataclass(frozen=True)
class DemoRun:
    path: Path
    printed: str
    calls: ModelCalls


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoRun]:
    """The demo's main job, once, with the hashing embedder, every model call recorded."""
    path = tmp_path_factory.mktemp("demo") / "store"
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MARS_EMBEDDER", "hashing")
        calls, token = _record()
        try:
            counts = demo.run(path, out=out, fifa=False)
        finally:
            _RECORDER.reset(token)
    assert counts["verified"] == 1
    yield DemoRun(path, out.getvalue(), calls)


def test_every_answer_claims_only_what_its_memory_block_holds(ran: DemoRun) -> None:
    questions = ran.calls.questions()
    assert len(questions) == len(demo.SESSIONS) == 3
    claims = {c.question: unsupported(c) for c in questions}
    assert not any(claims.values()), claims  # old demo: {"...dinner?": {"maya", "vegetarian"}}
    for call in questions:
        quotes = _QUOTE.findall(call.answer)
        assert set(quotes) <= call.memory_texts, (call.answer, call.memory_lines)
        outside = _QUOTE.sub(" ", call.answer)  # besides its quotes: the frame, the question
        assert content_words(outside) <= FRAME | content_words(call.question), call.answer
        # what the demo prints is what the model answered
        assert f"): {call.answer}\n" in ran.printed
    work, birthday, home = questions
    assert _QUOTE.findall(work.answer) == ["The user works at Tidewave"]
    assert "Ines's birthday" in _QUOTE.findall(birthday.answer)[0]
    assert _QUOTE.findall(home.answer) == ["The user lives in Porto"]  # not the corrected one


def test_a_fact_the_store_holds_but_did_not_recall_is_not_claimed(ran: DemoRun) -> None:
    home = ran.calls.questions()[-1]  # "Where do I live and what do I eat?"
    with MemoryStore.open(ran.path, read_only=True) as store:
        held = [n.content for n in store.list(demo.NAMESPACE)]
    assert "The user is vegetarian" in held  # the store has it ...
    assert not any("vegetarian" in line for line in home.memory_lines)  # ... recall did not
    assert "vegetarian" not in home.answer
    assert "What do I eat? Nothing in the memories I was given answers that." in home.answer


def test_forgetting_a_memory_takes_its_claim_away(ran: DemoRun, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MARS_EMBEDDER", "hashing")
    calls, token = _record()
    try:
        with MemoryStore.open(ran.path) as store:
            before = demo.ask(store, "Where do I work?", thread="before")
            # archived ones too: the archive is retrieval's second tier (an assistant's
            # earlier answer quoting the fact was evicted, not forgotten)
            about = [n for n in store.list(demo.NAMESPACE, status=None)
                     if "Tidewave" in n.content]
            for node in about:
                store.forget(node.id, reason="the user left Tidewave",
                             namespace=demo.NAMESPACE)
            after = demo.ask(store, "Where do I work?", thread="after")
    finally:
        _RECORDER.reset(token)
    assert '"The user works at Tidewave"' in before.answer and about
    assert "Tidewave" not in after.memory and "Tidewave" not in after.answer
    first, second = calls.questions()
    assert (first.answer, second.answer) == (before.answer, after.answer)
    assert not unsupported(first) and not unsupported(second)
    assert set(_QUOTE.findall(second.answer)) <= second.memory_texts
