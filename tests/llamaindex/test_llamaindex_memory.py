"""``MarsMemory`` on its own: token limit, determinism, set/reset/erase scoping,
async twins, isolation and bad input."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.llms import ChatMessage

from llamaindex_mars import MarsMemory
from llamaindex_mars._text import message_tokens
from mars_core import MemoryStore, ValidationError
from mars_core.model import MemoryStatus

TURNS = [
    ("user", "My sister Ana lives in Porto and works as a nurse."),
    ("assistant", "Good to know about Ana."),
    ("user", "I prefer window seats on long flights."),
    ("assistant", "Noted: window seats."),
    ("user", "My manager Bruno moved to Berlin in March."),
    ("assistant", "Thanks for telling me."),
    ("user", "I am allergic to peanuts."),
    ("assistant", "I will remember the allergy."),
]


def _fill(memory: MarsMemory, turns: list[tuple[str, str]] = TURNS) -> None:
    for role, text in turns:
        memory.put(ChatMessage(role=role, content=text))


def _tokens(store: MemoryStore, messages: list[ChatMessage]) -> int:
    return sum(message_tokens(m, store.token_counter.count) for m in messages)


def test_get_stays_within_the_token_limit_for_every_limit(mstore) -> None:
    store = mstore()
    _fill(MarsMemory(store, session_id="alice"))
    memory = MarsMemory(store, session_id="alice")
    _fill(memory, TURNS[:4])
    for limit in range(1, 400, 13):
        for recall in {0, limit // 4, limit // 2}:
            m = memory.model_copy(update={"token_limit": limit, "recall_tokens": recall})
            out = m.get(input="Where does Ana live?")
            assert _tokens(store, out) <= limit
            history = [x for x in out if x.role.value != "system"]
            assert history == memory.get_all()[len(memory.get_all()) - len(history):]
            if history:
                assert history[0].role.value == "user"
            inline = m.model_copy(update={"insert": "user"}).get(input="Where does Ana live?")
            assert _tokens(store, inline) <= limit
            assert [x.role.value for x in inline] == [x.role.value for x in history] or \
                inline[0].role.value == "system"
    assert len(store.list("alice", type="episodic")) == len(TURNS) + 4


def test_recall_skips_the_turns_already_in_the_window(mstore) -> None:
    store = mstore()
    memory = MarsMemory(store, session_id="alice", token_limit=2000)
    _fill(memory)
    system = memory.get(input="Ana nurse Porto")[0]
    assert system.role.value == "system"
    # every turn is in the window, so none is repeated as recalled evidence
    assert "My sister Ana lives in Porto" not in (system.content or "")
    assert "Ana" in (system.content or "")  # the fact extracted from it is recalled


def test_insert_user_prepends_recall_to_a_copy_of_the_latest_user_message(mstore) -> None:
    store = mstore()
    _fill(MarsMemory(store, session_id="alice"))
    memory = MarsMemory(store, session_id="alice", insert="user")
    memory.put(ChatMessage(role="user", content="Am I allergic to anything?"))
    [out] = memory.get()
    assert out.role.value == "user" and "peanuts" in (out.content or "")
    assert (out.content or "").endswith("Am I allergic to anything?")
    assert memory.get_all()[0].content == "Am I allergic to anything?"  # not mutated


def test_get_without_input_queries_with_the_latest_user_message(mstore) -> None:
    store = mstore()
    _fill(MarsMemory(store, session_id="alice"))
    memory = MarsMemory(store, session_id="alice")
    assert memory.get() == []  # nothing said yet: no query, no history
    memory.put(ChatMessage(role="user", content="Am I allergic to anything?"))
    out = memory.get()
    assert "peanuts" in (out[0].content or "") and out[-1].content == "Am I allergic to anything?"


def test_initial_token_count_is_taken_off_the_limit(mstore) -> None:
    store = mstore()
    memory = MarsMemory(store, session_id="alice", token_limit=120)
    _fill(memory)
    assert _tokens(store, memory.get(initial_token_count=100)) <= 20
    with pytest.raises(ValidationError):
        memory.get(initial_token_count=-1)


def test_get_is_deterministic(mstore) -> None:
    outs = []
    for _ in range(2):
        store = mstore()
        _fill(MarsMemory(store, session_id="alice"))
        memory = MarsMemory(store, session_id="alice", token_limit=300)
        _fill(memory, TURNS[2:4])
        outs.append([(m.role.value, m.content) for m in memory.get(input="Ana")])
    assert outs[0] == outs[1] and outs[0][0][0] == "system"


def test_set_observes_only_what_is_new(mstore) -> None:
    store = mstore()
    memory = MarsMemory(store, session_id="alice")
    history = [ChatMessage(role=r, content=t) for r, t in TURNS[:4]]
    memory.set(history)
    memory.set([*history, ChatMessage(role="user", content="Book a flight.")])
    memory.set([ChatMessage(role="system", content="Be brief."), *history])  # diverges at 0
    episodes = store.list("alice", type="episodic")
    assert len(episodes) == 4 + 1 + 4  # the system prompt is kept, not observed
    assert [m.role.value for m in memory.get_all()] == ["system", "user", "assistant",
                                                        "user", "assistant"]


def test_from_defaults_takes_a_chat_history(mstore) -> None:
    store = mstore()
    memory = MarsMemory.from_defaults(store=store, session_id="s",
                                      chat_history=[ChatMessage(role="user", content="hi")])
    assert [m.content for m in memory.get_all()] == ["hi"]
    assert [n.content for n in store.list("s")] == ["hi"]
    assert MarsMemory.from_defaults().session_id == "default"


def test_reset_forgets_only_its_session(mstore) -> None:
    store = mstore()
    alice, bob = MarsMemory(store, session_id="alice"), MarsMemory(store, session_id="bob")
    _fill(alice)
    _fill(bob, [("user", "My cat Tom likes tuna."), ("assistant", "Cute.")])
    bob_before = [n.id for n in store.list("bob")]
    alice.reset()
    assert alice.get_all() == [] and store.list("alice") == []
    archived = store.list("alice", status=MemoryStatus.ARCHIVED)
    assert archived and all("reset" in store.explain(n.id, namespace="alice").rationale
                        for n in archived[:1])
    assert [n.id for n in store.list("bob")] == bob_before
    assert len(bob.get_all()) == 2
    later = MarsMemory(store, session_id="bob")
    assert "tuna" in (later.get(input="What does Tom like?")[0].content or "")
    assert MarsMemory(store, session_id="alice").get(input="Where does Ana live?") == []


def test_erase_removes_only_its_session(mstore) -> None:
    store = mstore()
    alice, bob = MarsMemory(store, session_id="alice"), MarsMemory(store, session_id="bob")
    _fill(alice)
    _fill(bob, [("user", "My cat Tom likes tuna.")])
    receipt = alice.erase()
    assert receipt.namespace == "alice" and len(receipt.erased) > 0
    assert store.list("alice", status=None) == []
    assert len(store.list("bob")) >= 1


def test_sessions_never_see_each_other(mstore) -> None:
    store = mstore()
    _fill(MarsMemory(store, session_id="alice"))
    bob = MarsMemory(store, session_id="bob")
    bob.put(ChatMessage(role="user", content="Where does Ana live, and who is Bruno?"))
    text = " ".join(m.content or "" for m in bob.get())
    assert "Porto" not in text and "Berlin" not in text


async def test_async_twins_match_the_sync_methods(mstore) -> None:
    results = []
    for asynchronous in (False, True):
        store = mstore()
        memory = MarsMemory(store, session_id="alice", token_limit=400)
        msgs = [ChatMessage(role=r, content=t) for r, t in TURNS]
        if asynchronous:
            await memory.aput_messages(msgs[:6])
            await memory.aset(msgs)
            got = await memory.aget(input="peanuts")
            everything = await memory.aget_all()
        else:  # the synchronous methods, off the event loop
            def run(memory: MarsMemory = memory, msgs: list[ChatMessage] = msgs
                    ) -> tuple[list[ChatMessage], list[ChatMessage]]:
                memory.put_messages(msgs[:6])
                memory.set(msgs)
                return memory.get(input="peanuts"), memory.get_all()

            got, everything = await asyncio.to_thread(run)
        results.append(([(m.role.value, m.content) for m in got], len(everything),
                         [n.content for n in await store.alist("alice")]))
    assert results[0] == results[1]
    store = mstore()
    memory = MarsMemory(store, session_id="alice")
    await asyncio.to_thread(_fill, memory)
    await memory.areset()
    assert await store.alist("alice") == [] and memory.get_all() == []
    assert (await memory.aerase()).namespace == "alice"


@pytest.mark.parametrize("kwargs", [
    {"token_limit": 0}, {"token_limit": 10, "recall_tokens": 11}, {"evidence": 0},
    {"session_id": ""}, {"session_id": 3}, {"observe_roles": "user"},
    {"conversation_id": " "}, {"token_limit": True}, {"insert": "assistant"},
])
def test_bad_arguments_are_typed_errors(mstore, kwargs: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        MarsMemory(mstore(), **kwargs)  # type: ignore[arg-type]


def test_bad_input_changes_nothing(mstore) -> None:
    store = mstore()
    memory = MarsMemory(store, session_id="alice")
    with pytest.raises(ValidationError):
        MarsMemory("not a store")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        memory.put("hello")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        memory.set(["hello"])  # type: ignore[list-item]
    with pytest.raises(ValidationError):
        memory.get(input=42)  # type: ignore[arg-type]
    assert memory.get_all() == [] and store.list("alice") == []
    assert len(store.audit) == len(mstore().audit)
