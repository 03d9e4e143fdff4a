"""MarsStore quick start: a LangGraph store that forgets on purpose (offline, no LLM).

Run it:  python examples/langgraph_store.py [DIRECTORY]

It builds a two-node LangGraph graph whose nodes read and write ``runtime.store``, backed
by a persistent MaRS store with a deliberately small budget, then shows:

1. put / get / update (a new version; the old one is archived, not lost);
2. forgetting underneath: the budget evicts old items to the archive, ``get`` still reads
   them and ``search`` ranks them with the active ones on one scale (the best match
   first, archived or not);
3. delete = erasure: the text is gone from the records and the export, with a receipt;
4. reopen: the (namespace, key) index is rebuilt from the store's records.

Without DIRECTORY it uses a fresh temporary directory (printed, removed at the end).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from langchain_mars.store import MarsStore


class Turn(TypedDict):
    """One user turn through the graph."""

    user: str
    text: str
    reply: str


def remember(state: Turn, runtime: Runtime[None]) -> dict[str, str]:
    """Store what the user says (questions are not stored)."""
    store = runtime.store
    assert store is not None
    if not state["text"].endswith("?"):
        n = len(store.search(("memories", state["user"]), limit=1000))
        store.put(("memories", state["user"]), f"m{n}", {"text": state["text"]})
    return {}


def answer(state: Turn, runtime: Runtime[None]) -> dict[str, str]:
    """Answer with the best matching memory (a real agent would prompt a model with it)."""
    store = runtime.store
    assert store is not None
    hits = store.search(("memories", state["user"]), query=state["text"], limit=1)
    return {"reply": hits[0].value["text"] if hits else "(nothing remembered)"}


def build_graph(store: MarsStore):  # type: ignore[no-untyped-def]
    """The graph: remember, then answer; the store is injected into ``runtime.store``."""
    builder = StateGraph(Turn)
    builder.add_node("remember", remember)
    builder.add_node("answer", answer)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "answer")
    builder.add_edge("answer", END)
    return builder.compile(store=store)


def main(directory: Path) -> None:
    """Run the walkthrough in ``directory``."""
    print(f"store directory: {directory}")
    ns = ("memories", "ana")
    with MarsStore.open(directory, budget=60, policy="fifo") as store:
        graph = build_graph(store)
        for text in ("I moved to Porto last spring", "My cat is called Miso",
                     "My locker code is Zanzibar-4471"):
            graph.invoke({"user": "ana", "text": text, "reply": ""})
        out = graph.invoke({"user": "ana", "text": "what is my cat called?", "reply": ""})
        print(f"1. answer from the store: {out['reply']!r}")

        store.put(ns, "m0", {"text": "I moved to Lisbon last spring"})  # an update
        versions = store.memory.history(store.node_id(ns, "m0") or "", namespace=ns)
        print(f"   update of m0 -> {store.get(ns, 'm0').value['text']!r}; "  # type: ignore[union-attr]
              f"versions: {[v.status.value for v in versions]}")

        for i in range(4):  # more memories than the 60-token budget holds
            store.put(ns, f"hobby{i}", {"text": f"Ana practises hobby number {i} on weekends"})
        state = {k: store.memory.get(store.node_id(ns, k) or "", namespace=ns).status.value
                 for k in ("m0", "m1", "m2", "hobby3")}
        print(f"2. after the budget forced forgetting: {state}")
        print(f"   get(m1) still reads through the archive: "
              f"{store.get(ns, 'm1').value['text']!r}")  # type: ignore[union-attr]
        ranked = [(h.key, state.get(h.key, "active"))
                  for h in store.search(ns, query="cat Miso hobby", limit=4)]
        print(f"   search ranks the archive on one scale: {ranked}")

        receipts = store.erase(ns, "m2")
        erased = sum(len(r.erased) for r in receipts)
        export = json.dumps(store.memory.export_jsonld())
        print(f"3. erased m2 ({erased} memory); after delete the export mentions "
              f"Zanzibar: {'Zanzibar' in export}; get(m2) -> {store.get(ns, 'm2')}")

    with MarsStore.open(directory) as store:
        print(f"4. reopened: {len(store.list_namespaces())} namespace, "
              f"m0 = {store.get(ns, 'm0').value['text']!r}, "  # type: ignore[union-attr]
              f"m2 = {store.get(ns, 'm2')}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory(prefix="mars-langgraph-") as tmp:
            main(Path(tmp) / "store")
