"""Quick start: the core store in five minutes, offline (run: python examples/quickstart.py)."""

import tempfile

from mars_core import MemoryStore

with tempfile.TemporaryDirectory() as path, MemoryStore.open(path, budget=120,
                                                             policy="hybrid") as store:
    # a conversation: one episode per turn, plus facts, people and plans extracted by rules
    store.observe("user", "Hi! I'm Maya. I live in Lisbon and I'm allergic to peanuts.",
                  namespace="maya")
    store.observe("user", "My sister Ines turns 30 on Friday; remind me to book a table.",
                  namespace="maya")
    for i in range(12):  # small talk that pushes the namespace over its 120-token budget
        store.observe("user", f"Small talk number {i} about the weather today.",
                      namespace="maya")

    print(store.render_context("What is Maya allergic to?", budget_tokens=80,
                               namespace="maya", evidence_only=True))
    stats = store.stats("maya")["namespaces"]["maya"]
    print(f"active {stats['active']}, archived {stats['archived']}, "
          f"{stats['tokens']}/{stats['budget']} tokens")

    forgotten = store.list("maya", status="archived")[0]
    print("why:", store.explain(forgotten.id, namespace="maya").rationale)

    receipt = store.erase(entity="Ines", namespace="maya")  # right to be forgotten
    print(receipt.render().splitlines()[0])
    print("audit chain ok:", store.verify().ok)
