"""MaRS as a long-term memory block of LlamaIndex's ``Memory`` — offline.

Run: python examples/llamaindex_memory_block.py

``Memory`` keeps a short FIFO of messages; what overflows is flushed into MarsMemoryBlock
(observed into MaRS), and every read asks MaRS what it recalls for the latest message,
within the block's and the Memory's token limits.
"""

from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory

from llamaindex_mars import MarsMemoryBlock
from mars_core import MemoryStore

TURNS = ["I work at Acme as a welder.", "Great job!", "My cat is called Tom.", "Cute.",
         "I live in Porto.", "Lovely city.", "The weather is mild today.", "Indeed."]


def main() -> None:
    with MemoryStore(budget=2000) as store:
        block = MarsMemoryBlock(store, budget_tokens=150, priority=1)
        memory = Memory.from_defaults(session_id="bob", token_limit=200, token_flush_size=8,
                                      chat_history_token_ratio=0.1, memory_blocks=[block])
        for i, text in enumerate(TURNS):
            memory.put(ChatMessage(role="user" if i % 2 == 0 else "assistant", content=text))
        print("flushed into MaRS:", [n.content for n in store.list("bob")])
        messages = memory.get(input="Where do I work?")
        tokens = sum(memory._estimate_token_count(m) for m in messages)
        print(f"memory.get() -> {len(messages)} messages, {tokens} <= {memory.token_limit} tokens")
        for m in messages:
            print(f"  [{m.role.value}] {m.content}")


if __name__ == "__main__":
    main()
