"""MaRS memory in LangChain, offline: a retriever, then an agent that remembers across threads.

Run: python examples/langchain_quickstart.py   (no network, no API key: fake chat models)
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_mars.middleware import MarsMemoryMiddleware
from langchain_mars.retrievers import MarsRetriever
from mars_core import FakeClock, MemoryStore


class ShowSystemPrompt(BaseCallbackHandler):
    """Prints the system message each model call receives."""

    def on_chat_model_start(self, serialized: dict[str, Any],
                            messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        for message in messages[0]:
            if message.type == "system":
                print("  model sees system message:\n    " +
                      message.text.replace("\n", "\n    "))


def main() -> None:
    store = MemoryStore(budget=2000, clock=FakeClock())  # in memory; MemoryStore.open(dir) persists

    # 1. A retriever over memories: k documents, metadata with type, sensitivity, scores.
    store.add("Ana lives in Lisbon", type="semantic", namespace="memories/ana")
    store.add("Ana's brother Bo plays the drums", type="social", namespace="memories/ana")
    retriever = MarsRetriever(store=store, k=1, namespace=("memories", "{user_id}"))
    doc = retriever.invoke("Where does Ana live?", config={"configurable": {"user_id": "ana"}})[0]
    print(f"retriever: {doc.page_content!r} type={doc.metadata['memory_type']} "
          f"score={doc.metadata['score']:.2f}")

    # 2. An agent with memory middleware: what thread A learns, thread B recalls.
    agent = create_agent(
        FakeListChatModel(responses=["Noted!", "Skip the satay: you are allergic to peanuts."]),
        system_prompt="You are a helpful cook.",
        middleware=[MarsMemoryMiddleware(store, namespace=("memories", "{user_id}"))],
        checkpointer=InMemorySaver(),
    )
    for thread, text in (("thread-a", "I am allergic to peanuts."),
                         ("thread-b", "What snacks should I avoid, given what I'm allergic to?")):
        print(f"[{thread}] user: {text}")
        out = agent.invoke({"messages": [("user", text)]},
                           {"configurable": {"thread_id": thread},
                            "callbacks": [ShowSystemPrompt()]},
                           context={"user_id": "ana"})
        print(f"[{thread}] agent: {out['messages'][-1].text}")

    facts = [n.content for n in store.list("memories/ana", type="semantic")]
    print("semantic memories of ana:", facts)
    store.close()


if __name__ == "__main__":
    main()
