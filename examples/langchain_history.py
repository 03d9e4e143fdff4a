"""MaRS as the chat history of RunnableWithMessageHistory, offline (fake chat model).

Every message is observed into the store (turns + extracted facts); the history the chain
sees is the newest turns of its session within a token budget; clear() is per session.

Run: python examples/langchain_history.py
"""

from __future__ import annotations

import warnings

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from langchain_mars.chat_history import MarsChatMessageHistory
from mars_core import FakeClock, MemoryStore

warnings.filterwarnings("ignore", category=DeprecationWarning)  # the classes are deprecated


def main() -> None:
    store = MemoryStore(budget=2000, clock=FakeClock())
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are terse."), MessagesPlaceholder("history"), ("human", "{input}")])
    chain = RunnableWithMessageHistory(
        prompt | FakeListChatModel(responses=["Hello Ana.", "You live in Porto.", "Hi!"]),
        lambda session_id: MarsChatMessageHistory(store, session_id, namespace="ana",
                                                  budget_tokens=40),
        input_messages_key="input", history_messages_key="history")

    for session, text in (("s1", "Hi, I'm Ana and I live in Porto."), ("s1", "Where do I live?"),
                          ("s2", "Hello again")):
        reply = chain.invoke({"input": text}, {"configurable": {"session_id": session}})
        print(f"[{session}] user: {text}\n[{session}] ai:   {reply.text}")

    for session in ("s1", "s2"):
        history = MarsChatMessageHistory(store, session, namespace="ana", budget_tokens=40)
        print(f"history {session}:", [f"{m.type}: {m.text}" for m in history.messages])
    print("facts learned:", [n.content for n in store.list("ana", type="semantic")])

    MarsChatMessageHistory(store, "s1", namespace="ana").clear()
    print("after clearing s1:", {s: len(MarsChatMessageHistory(store, s, namespace="ana").messages)
                                 for s in ("s1", "s2")})
    store.close()


if __name__ == "__main__":
    main()
