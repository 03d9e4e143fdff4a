"""The demo behind ``make demo``: a LangGraph agent with MaRS memory, over several sessions.

Each session reopens the store from disk (the embedded default: Chroma on local disk
with the best installed embedder), builds a LangChain/LangGraph agent
(``langchain.agents.create_agent`` with :class:`langchain_mars.MarsMemoryMiddleware`),
and talks to it. Before each model call the middleware injects what MaRS recalls; after
each run it observes the turn (an episode plus facts, people and plans extracted by
rules) and reinforces the memories the answer used. The store keeps a small token budget
with the hybrid policy.

The model is :class:`langchain_mars.quoting.QuotingChatModel`, a deterministic fake (no
API key, no network) that answers a question only by quoting the memory lines it
received in that call, and gives an empty reply to a statement (so only the user's turn
is stored): every claim of an answer is a memory that was recalled, so what the demo
shows is what the memory did — a fact memory did not recall is not claimed, even when
the store holds it.

After each session ``store.maintain()`` runs (TTL, dedup, reflection): in session 2 the
user complains about the same traffic three times, the store is near its budget, and
reflection consolidates the three episodes into one semantic summary. At the end the
demo shows what is remembered (with DMF tier and decayed score), what was summarised
into what and why, what was forgotten and why, erases a person with a receipt,
verifies the audit chain, and runs a quick FiFA comparison of policies.

Run it with ``make demo`` or ``mars demo --path ./mars_data/demo --fresh``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from mars_core.errors import ConfigError, ExtraNotInstalledError
from mars_core.io.inspect import inspect_rows
from mars_core.model import MemoryStatus
from mars_core.store import MemoryStore

__all__ = ["SESSIONS", "SYSTEM_PROMPT", "Exchange", "ask", "main", "run"]

USER = ("memories", "maya")
NAMESPACE = "memories/maya"
_MARK = ".mars-demo"  # marks a directory this demo created
BUDGET = 200
"""Tokens the demo store keeps: full by the end of session 2, so ``maintain()`` reflects
(at ``reflect_at`` = 90% of the budget) and session 3 forgets under pressure."""
SYSTEM_PROMPT = "You are Maya's assistant."
# Per session: what the user tells the agent, then a question. The agent's model is
# langchain_mars.quoting.QuotingChatModel: an empty reply to a statement, and to a
# question only quotes of the memory lines it was given in that call.
SESSIONS: list[tuple[list[str], str]] = [
    ([
        "Hi, I'm Maya. I live in Lisbon and I work at Tidewave.",
        "The weather was lovely today, we walked along the river.",
        "My sister Ines is a nurse in Porto.",
        "I love green tea and I am vegetarian.",
    ], "Where do I work?"),
    ([
        "Remind me to book a table for Ines's birthday on Friday.",
        # the same complaint three times: a redundant cluster for reflection to consolidate
        "The traffic on the bridge was terrible again on Friday, and I was late for dinner "
        "again.",
        "The traffic on the bridge was terrible again on Monday, and I was late for the "
        "meeting again.",
        "The traffic on the bridge was terrible again this morning, and I was late for work "
        "again.",
    ], "What should I remember for Ines's birthday?"),
    ([
        "My card number is 4111 1111 1111 1111, keep it safe.",
        "Actually, I live in Porto now, I moved last week.",
        "I watched a documentary about octopuses.",
    ], "Where do I live and what do I eat?"),
]


@dataclass(frozen=True, slots=True)
class Exchange:
    """One question to the demo's agent.

    Attributes:
        question: what the user asked.
        memory: the memory block the model received in that call (its system message
            after :data:`SYSTEM_PROMPT`; empty when nothing was recalled).
        answer: the model's answer (quotes of ``memory`` lines only).
    """

    question: str
    memory: str
    answer: str


def _line(out: TextIO, text: str = "") -> None:
    out.write(text + "\n")


def _open(path: Path, budget: int) -> MemoryStore:
    return MemoryStore.open(path, budget=budget, policy="hybrid")


class _Agent:
    """A LangGraph agent (create_agent) with MaRS memory and the quoting fake model."""

    def __init__(self, store: MemoryStore, thread: str) -> None:
        try:
            from langchain.agents import create_agent
            from langchain_core.callbacks import BaseCallbackHandler
            from langgraph.checkpoint.memory import InMemorySaver

            from langchain_mars.middleware import MarsMemoryMiddleware
            from langchain_mars.quoting import QuotingChatModel
        except ImportError as exc:
            raise ExtraNotInstalledError("langchain", "the demo's agent (and langgraph)") from exc
        systems: list[str] = []

        class SeeSystem(BaseCallbackHandler):
            """Records the system message of every model call (what the model received)."""

            def on_chat_model_start(self, serialized: Any, messages: Any, **kw: Any) -> None:
                systems.append("\n".join(m.text for m in messages[0] if m.type == "system"))

        self.systems = systems
        memory = MarsMemoryMiddleware(store, namespace=NAMESPACE, budget_tokens=160)
        self.graph: Any = create_agent(QuotingChatModel(acknowledgement=""),
                                  system_prompt=SYSTEM_PROMPT, middleware=[memory],
                                  checkpointer=InMemorySaver())
        self.config: dict[str, Any] = {"configurable": {"thread_id": thread},
                                       "callbacks": [SeeSystem()]}

    def say(self, text: str) -> Exchange:
        """One user message through the agent; what the model received and answered."""
        self.systems.clear()
        result = self.graph.invoke({"messages": [("user", text)]}, self.config)
        system = self.systems[-1] if self.systems else ""
        memory = system.removeprefix(SYSTEM_PROMPT).strip()
        return Exchange(text, memory, str(result["messages"][-1].text))


def ask(store: MemoryStore, question: str, thread: str = "ask") -> Exchange:
    """Ask the demo's agent one question over ``store`` (namespace :data:`NAMESPACE`).

    The agent recalls, answers by quoting what it recalled, and observes the turn, as in
    the demo's sessions.

    Examples:
        >>> from mars_core import MemoryStore
        >>> with MemoryStore(budget=500) as store:
        ...     _ = store.observe("user", "I work at Tidewave.", namespace=NAMESPACE)
        ...     ask(store, "Where do I work?").answer
        'From memory: "The user works at Tidewave".'
    """
    return _Agent(store, thread).say(question)


def _session(store: MemoryStore, number: int, turns: list[str], question: str,
             out: TextIO) -> Exchange:
    agent = _Agent(store, f"session-{number}")
    for user in turns:
        before = {n.id for n in store.list(NAMESPACE)}
        agent.say(user)
        _line(out, f"   user: {user}")
        for n in store.list(NAMESPACE):
            if n.id in before or n.type.value == "episodic":
                continue
            if n.provenance.source == "summary":  # the write's budget pressure reflected
                _line(out, f"      ⇢ summary of {len(n.provenance.derived_from)} episodes: "
                           f"{_redacted(store, n.id)}")
            else:
                _line(out, f"      + {n.type.value}: {n.content}")
    _maintain(store, out)
    asked = agent.say(question)
    _line(out, f"   Q: {question}")
    _line(out, "   the model received:\n      "
               + (asked.memory or "(nothing recalled)").replace("\n", "\n      "))
    _line(out, f"   A (quoting model: it only quotes the memory lines above): {asked.answer}")
    return asked


def _maintain(store: MemoryStore, out: TextIO) -> None:
    """End-of-session hygiene (``store.maintain``): TTL, dedup, reflection; show what it did."""
    before = {n.id for n in store.list(NAMESPACE)}
    report = store.maintain(NAMESPACE)[NAMESPACE]
    _line(out, f"   store.maintain(): {report['summarised']} summarised, {report['merged']} "
               f"merged, {report['expired']} expired")
    for node in store.list(NAMESPACE):
        if node.id not in before and node.provenance.source == "summary":
            _line(out, f"      ⇢ summary of {len(node.provenance.derived_from)} episodes: "
                       f"{_redacted(store, node.id)}")


def _redacted(store: MemoryStore, node_id: str) -> str:
    """A memory's text as ``mars inspect`` shows it (redacted), whole."""
    for status in (MemoryStatus.ACTIVE.value, MemoryStatus.ARCHIVED.value):
        for row in inspect_rows(store, NAMESPACE, status=status, width=None):
            if row.id == node_id:
                return row.text
    return f"(memory {node_id} is gone)"


def run(path: Path, budget: int = BUDGET, out: TextIO = sys.stdout,
        fifa: bool = True) -> dict[str, int]:
    """Play the sessions against a store at ``path``; returns counts for tests."""
    path.mkdir(parents=True, exist_ok=True)
    (path / _MARK).touch()  # what --fresh checks before it deletes anything
    for number, (turns, question) in enumerate(SESSIONS, start=1):
        with _open(path, budget) as store:
            held = len(store.list(NAMESPACE))
            _line(out, f"── session {number}: reopened {path} ({held} memories active, "
                       f"{store.stats()['index']} index + {store.stats()['embedder']})")
            _session(store, number, turns, question, out)
    counts = _report(path, budget, out)
    if fifa:
        _fifa_table(out)
    return counts


def _summaries(store: MemoryStore, out: TextIO) -> tuple[int, set[str]]:
    """Show each summary reflection made, what it replaced and the audit's reason.

    Returns how many summaries there are and the ids of the memories they replaced.
    """
    nodes = store.list(NAMESPACE, status=None)
    made = [n for n in nodes if n.provenance.source == "summary"]
    replaced: set[str] = set()
    _line(out, "── summarised: reflection replaced redundant episodes by one semantic memory "
               "(the episodes move to the archive, linked by derivesFrom; the default "
               "summariser is extractive: it keeps the most central sentence):")
    if not made:
        _line(out, "   nothing this run (no redundant cluster reached the reflection threshold)")
    for node in made:
        explained = store.explain(node.id, namespace=NAMESPACE)
        why = [e.rationale for e in explained.events if e.op.value == "summarise"]
        _line(out, f"   summary ({node.status.value}): {_redacted(store, node.id)}")
        for member in node.provenance.derived_from:
            replaced.add(member)
            _line(out, f"      from: {_redacted(store, member)}")
        _line(out, f"      why: {why[0] if why else explained.rationale}")
    return len(made), replaced


def _report(path: Path, budget: int, out: TextIO) -> dict[str, int]:
    with _open(path, budget) as store:
        st = store.stats(NAMESPACE)["namespaces"][NAMESPACE]
        _line(out)
        _line(out, f"── remembered ({st['tokens']} of {st['budget']} tokens); "
                   "Ω_eff decays with every newer turn:")
        for r in inspect_rows(store, NAMESPACE):
            _line(out, f"   {r.type:<9} {r.tier:<9} Ω_eff={r.score:.2f} s={r.sensitivity:.2f} "
                       f"used {r.access_count}x  {r.text}")
        summarised, replaced = _summaries(store, out)
        archived = [r for r in inspect_rows(store, NAMESPACE, status=MemoryStatus.ARCHIVED.value)
                    if r.id not in replaced]
        _line(out, "── forgotten: in the archive, each with its reason (text redacted, as "
                   "`mars inspect` shows it):")
        summaries = {n.id for n in store.list(NAMESPACE, status=None)
                     if n.provenance.source == "summary"}
        alike: dict[tuple[str, str], list[str]] = {}  # the same text forgotten many times
        for r in archived:
            alike.setdefault(("summary" if r.id in summaries else r.type, r.text), []).append(r.id)
        for (kind, text), ids in alike.items():
            times = f"  (×{len(ids)})" if len(ids) > 1 else ""
            _line(out, f"   {kind:<9} {text}{times}")
            first = " (the first)" if len(ids) > 1 else ""
            _line(out, f"      why{first}: {store.explain(ids[0], namespace=NAMESPACE).rationale}")
        receipt = store.erase(entity="Ines", namespace=NAMESPACE)
        _line(out, "── right to be forgotten: erase(entity='Ines')")
        _line(out, "   " + receipt.render().replace("\n", "\n   "))
        report = store.verify()
        _line(out, f"── audit: {report.checked} events, chain "
                   f"{'verified' if report.ok else 'BROKEN: ' + report.reason}")
        return {"active": st["active"], "archived": st["archived"], "events": report.checked,
                "verified": int(report.ok), "erased": len(receipt.erased),
                "summarised": summarised}


def _fifa_table(out: TextIO) -> None:
    """A quick FiFA run: three policies, one scenario, one seed, a tight budget (the cells
    only: the benchmark's statistics need the ``bench`` extra, the demo does not)."""
    from mars_core.bench.fifa.runner import grid_tasks, run_grid

    tasks = grid_tasks([0], ["fifo", "lru", "hybrid"], [2000], 1.0,
                       scenarios=["crisis_management"])
    cells = run_grid(tasks, workers=1, progress=False)
    _line(out, "── FiFA (seed 000 §6), crisis management, seed 0, 2,000-token budget:")
    _line(out, "   policy   composite  coherence  goals  leakage  tokens/answer")
    for cell in cells:
        m = cell["metrics"]
        _line(out, f"   {cell['policy']:<8} {m['composite']:9.3f} {m['nc']:10.3f} "
                   f"{m['gcr']:6.3f} {m['leakage']:8.3f} {m['token_cost']:14.1f}")
    _line(out, "   full grid: mars bench fifa --out DIR  (docs/benchmarks/fifa.md)")


def _delete_demo_store(path: Path) -> None:
    """Delete ``path`` only if this demo made it (or it is empty): ``--fresh`` must never
    delete a real store given by mistake.

    Raises:
        ConfigError: ``path`` holds something the demo did not make.
    """
    if not path.exists() or (path.is_dir() and not any(path.iterdir())):
        return
    if not (path / _MARK).is_file():
        raise ConfigError(f"{path} is not a demo store (no {_MARK} file): --fresh deletes only "
                          "what the demo made; pick another --path")
    shutil.rmtree(path)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--path", type=Path, default=Path("./mars_data/demo"))
    parser.add_argument("--budget", type=int, default=BUDGET)
    parser.add_argument("--fresh", action="store_true", help="delete the demo store first")
    parser.add_argument("--no-fifa", action="store_true", help="skip the FiFA table")
    args = parser.parse_args(argv)
    if args.fresh:
        try:
            _delete_demo_store(args.path)
        except ConfigError as exc:
            print(f"mars demo: {exc}", file=sys.stderr)
            return 2
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    counts = run(args.path, args.budget, fifa=not args.no_fifa)
    return 0 if counts["verified"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
