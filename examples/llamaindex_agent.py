"""A LlamaIndex agent that remembers across conversations with MaRS — offline.

Run: python examples/llamaindex_agent.py

The LLM is LlamaIndex's MockFunctionCallingLLM with a tiny stand-in "brain" that answers
with the recalled memory sharing most words with the question; swap in any real LLM
(OpenAI, Ollama, ...) and nothing else changes.
"""

import asyncio
import re
import tempfile

from llama_index.core.agent.workflow import FunctionAgent, ReActAgent
from llama_index.core.llms import ChatMessage, MockFunctionCallingLLM

from llamaindex_mars import MarsMemory
from mars_core import MemoryStore


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def stand_in_llm(messages: list[ChatMessage], **_: object) -> ChatMessage:
    """Answer with the recalled memory that best matches the question (ReAct format)."""
    question = messages[-1].content or ""
    recalled = [line.split("] ", 1)[-1] for m in messages
                for line in (m.content or "").splitlines() if line.startswith("- [")]
    best = max(recalled, key=lambda t: len(words(t) & words(question)), default="")
    return ChatMessage(role="assistant", content=f"Thought: I remember.\nAnswer: {best or 'noted'}")


async def main(path: str) -> None:
    llm = MockFunctionCallingLLM(response_generator=stand_in_llm)
    prompt = "You are a helpful travel assistant."
    for agent in (FunctionAgent(llm=llm, tools=[], system_prompt=prompt),
                  ReActAgent(llm=llm, tools=[], system_prompt=prompt)):
        name = type(agent).__name__
        # Monday: the user tells the agent a few things (session = store namespace).
        with MemoryStore.open(path) as store:
            memory = MarsMemory(store, session_id=f"alice-{name}")
            for turn in ["My sister Ana lives in Porto.", "I prefer window seats on trains."]:
                await agent.run(user_msg=turn, memory=memory)
            await agent.run(user_msg="I love hiking.",
                            memory=MarsMemory(store, session_id=f"bob-{name}"))
        # Friday, after a restart: a new conversation, an empty chat history.
        with MemoryStore.open(path) as store:
            memory = MarsMemory(store, session_id=f"alice-{name}")
            answer = await agent.run(user_msg="Which seats do I prefer on trains?",
                                     memory=memory)
            reply = str(answer).split("Answer:")[-1].strip()
            print(f"{name} ({memory.conversation_id}) answers: {reply}")
            bob = MarsMemory(store, session_id=f"bob-{name}")
            recalled = await bob.aget(input="Where does Ana live?")
            print(f"{name} bob's session knows about Ana: "
                  f"{any('Ana' in (m.content or '') for m in recalled)}")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(tmp))
