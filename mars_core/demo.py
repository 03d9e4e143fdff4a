"""The demo behind ``make demo``: a multi-session conversation through a store on disk.

Each session reopens the store from disk (as a new process would), stores the turns as
typed memories under a small token budget, and answers a question from memory. At the
end it prints what was kept, what was forgotten and why, and verifies the audit chain.

Run it with ``python -m mars_core.demo --path ./mars_data/demo --fresh``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from mars_core.model import MemoryStatus, TaskStatus
from mars_core.store import MemoryStore

__all__ = ["SESSIONS", "main", "run"]

# (memory type, text, extra add() arguments) per session, then a question.
SESSIONS: list[tuple[list[tuple[str, str, dict[str, object]]], str]] = [
    ([
        ("episodic", "user: Hi, I'm Maya. I just moved to Lisbon for a new job at Tidewave.", {}),
        ("semantic", "Maya lives in Lisbon and works at Tidewave.",
         {"payload": {"concept": "Maya"}}),
        ("episodic", "user: The weather was lovely today, we walked along the river.", {}),
        ("social", "Maya's sister Inês is a nurse in Porto.",
         {"payload": {"entity": "Inês", "relationship_type": "sister"}}),
        ("episodic", "assistant: Welcome to Lisbon! Tell me if you need anything.", {}),
    ], "Where does Maya work?"),
    ([
        ("task", "Book a table for Inês's birthday dinner on Friday.",
         {"payload": {"goal": "birthday dinner", "status": TaskStatus.ACTIVE, "priority": 0.9}}),
        ("episodic", "user: I had pastel de nata for breakfast again.", {}),
        ("semantic", "Maya is vegetarian.", {"payload": {"concept": "Maya"}}),
        ("episodic", "user: Traffic on the bridge was terrible this morning.", {}),
        ("episodic", "assistant: Noted, I will suggest vegetarian restaurants.", {}),
    ], "What should I remember for the birthday dinner?"),
    ([
        ("episodic", "user: Work was busy, three meetings back to back.", {}),
        ("episodic", "user: I watched a documentary about octopuses.", {}),
        ("episodic", "user: My card number is 4111 1111 1111 1111, keep it safe.",
         {"sensitivity": 0.95}),
        ("episodic", "assistant: I would rather not keep card numbers; please don't share them.",
         {}),
        ("episodic", "user: The octopus documentary was amazing, they can taste with arms.", {}),
    ], "What does Maya eat?"),
]


def _line(out: TextIO, text: str = "") -> None:
    out.write(text + "\n")


def run(path: Path, budget: int = 70, out: TextIO = sys.stdout) -> dict[str, int]:
    """Play the sessions against a store at ``path``; returns counts for tests."""
    for number, (turns, question) in enumerate(SESSIONS, start=1):
        with MemoryStore.open(path, budget=budget, policy="lru") as store:
            _line(out, f"── session {number}: reopened {path} "
                       f"({store.stats()['namespaces'].get('maya', {}).get('active', 0)} "
                       "memories active)")
            for mtype, text, extra in turns:
                store.add(text, type=mtype, namespace="maya",
                          provenance={"source": text.split(":")[0] if ":" in text else "user",
                                      "conversation_id": f"session-{number}"},
                          **extra)  # type: ignore[arg-type]
            hits = store.retrieve(question, namespace="maya", budget_tokens=30,
                                  max_sensitivity=0.5)
            _line(out, f"   Q: {question}")
            for h in hits:
                _line(out, f"   → [{h.node.type.value}] {h.text}  (score {h.score:.2f})")
    return _report(path, budget, out)


def _report(path: Path, budget: int, out: TextIO) -> dict[str, int]:
    with MemoryStore.open(path, budget=budget, policy="lru") as store:
        st = store.stats("maya")["namespaces"]["maya"]
        _line(out)
        _line(out, f"── kept ({st['tokens']} of {st['budget']} tokens):")
        for n in store.list("maya"):
            _line(out, f"   {n.type.value:<9} {n.weight:>3} tok  used {n.access_count}x  "
                       f"{n.content[:70]}")
        _line(out, "── forgotten (moved to the archive, explainable):")
        for n in store.list("maya", status=MemoryStatus.ARCHIVED):
            _line(out, f"   {n.content[:60]}")
            _line(out, f"      why: {store.explain(n.id).rationale}")
        report = store.verify()
        _line(out, f"── audit: {report.checked} events, chain "
                   f"{'verified' if report.ok else 'BROKEN: ' + report.reason}")
        return {"active": st["active"], "archived": st["archived"], "events": report.checked,
                "verified": int(report.ok)}


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--path", type=Path, default=Path("./mars_data/demo"))
    parser.add_argument("--budget", type=int, default=70)
    parser.add_argument("--fresh", action="store_true", help="delete the demo store first")
    args = parser.parse_args(argv)
    if args.fresh and args.path.exists():
        shutil.rmtree(args.path)
    counts = run(args.path, args.budget)
    return 0 if counts["verified"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
