"""Oblivion's memory loop as LangGraph nodes around an agent — offline, with a fake model.

Run: ``python examples/langgraph_oblivion.py``. It prints, turn by turn, whether the
Decayer skipped or triggered retrieval, what the model received, which memories the
answer used (and were reinforced), and how a procedure learned from feedback reaches the
model the next time a question of the same topic comes.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_mars.graph import MarsMemoryState, memory_messages, with_mars_memory
from mars_core import FakeClock, MemoryStore

TURNS: list[tuple[str, str, str | None]] = [
    ("I live in Porto and my sister Marta is a nurse.", "Noted!", None),
    ("Where do I live?", "You live in Porto.", None),
    ("Do I live in Porto?", "Yes, you live in Porto.", None),
    ("What will the weather be like on my trip tomorrow?", "About 68 degrees.",
     "Wrong unit. Next time, always give temperatures in Celsius."),
    ("What will the weather be like on my trip next week?", "About 20 degrees Celsius.", None),
    ("What job does Marta have?", "Marta is a nurse.", None),
]


def main() -> dict[str, Any]:
    """Run the conversation; return what the checks in the test look at."""
    model = GenericFakeChatModel(messages=iter(AIMessage(a) for _, a, _ in TURNS))
    seen: list[str] = []

    def agent(state: MarsMemoryState) -> dict[str, Any]:
        msgs = memory_messages(state)
        seen.append(str(msgs[0].content) if msgs and msgs[0].type == "system" else "")
        return {"messages": [model.invoke(msgs)]}

    store = MemoryStore(clock=FakeClock())
    app = with_mars_memory(agent, store, namespace="demo", max_iterations=2).compile(
        checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "demo"}}
    retrieved: list[bool] = []
    for i, (question, _, feedback) in enumerate(TURNS, 1):
        nodes = [n for update in app.stream(
            {"messages": [("user", question)], "mars_feedback": feedback}, cfg,
            stream_mode="updates") for n in update]
        state = app.get_state(cfg).values
        retrieved.append("activator" in nodes)
        print(f"\n--- turn {i}: {question}")
        print("  decayer:", " | ".join(state["mars_rounds"]))
        print("  retrieval:", "triggered" if retrieved[-1] else "skipped (buffer suffices)")
        for line in seen[-1].splitlines():
            if line.startswith(("Procedures", "- always", "Relevant", "- [L")):
                print("  model saw:", line)
        print("  answer:", state["messages"][-1].content)
        used = [store.get(u, namespace="demo") for u in state["mars_used"]]
        print("  used & reinforced:", [f"{n.content[:40]} (accesses {n.access_count})"
                                       for n in used])
        if feedback:
            print("  feedback:", feedback)
    store.close()
    return {"retrieved": retrieved, "prompts": seen}


if __name__ == "__main__":
    main()
