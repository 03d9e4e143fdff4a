"""MaRS as the memory of LlamaIndex chat engines — offline.

Run: python examples/llamaindex_chat_engine.py

SimpleChatEngine gets recalled memories from MarsMemory; CondensePlusContextChatEngine
also retrieves with MarsRetriever. The mock LLM answers "text text"; we print what it
*received*, which is what a real LLM would see.
"""

from llama_index.core.chat_engine import CondensePlusContextChatEngine, SimpleChatEngine
from llama_index.core.llms.mock import MockLLMWithChatMemoryOfLastCall

from llamaindex_mars import MarsMemory, MarsRetriever
from mars_core import MemoryStore


def llm_input(llm: MockLLMWithChatMemoryOfLastCall) -> str:
    return "\n".join(f"  [{m.role.value}] {m.content}" for m in llm.last_chat_messages or [])


def main() -> None:
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=2, is_chat_model=True)
    with MemoryStore(budget=2000) as store:
        first = SimpleChatEngine.from_defaults(llm=llm, memory=MarsMemory(store, "alice"))
        first.chat("My dog Rex is a beagle and he is afraid of thunder.")
        first.chat("My flight to Oslo leaves on Monday.")

        later = SimpleChatEngine.from_defaults(llm=llm, memory=MarsMemory(store, "alice"))
        later.chat("What breed is my dog?")
        print("SimpleChatEngine, a later conversation; the LLM received:")
        print(llm_input(llm))

        engine = CondensePlusContextChatEngine.from_defaults(
            retriever=MarsRetriever(store, "alice", k=2), llm=llm,
            memory=MarsMemory(store, "alice"), skip_condense=True)
        engine.chat("When does my flight leave?")
        print("CondensePlusContextChatEngine; the LLM received:")
        print(llm_input(llm))

        engine.reset()  # forgets alice's session (to the archive); other sessions stay
        print("after reset, alice's active memories:", len(store.list("alice")),
              "archived:", len(store.list("alice", status="archived")))


if __name__ == "__main__":
    main()
