"""The demo behind ``make demo``: a multi-session conversation through a store on disk.

Each session reopens the store from disk (as a new process would) and observes the turns
of a conversation — no LLM call: an episode per turn, facts, preferences, people and
plans extracted by rules — under a small token budget with the hybrid forgetting
policy. It answers a question per session with ``render_context``, then prints what is
kept, what was summarised or forgotten and why, erases a person with a receipt, and
verifies the audit chain.

Run it with ``python -m mars_core.demo --path ./mars_data/demo --fresh``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from mars_core.model import MemoryStatus
from mars_core.store import MemoryStore

__all__ = ["SESSIONS", "main", "run"]

# (speaker, text) per session, then a question.
SESSIONS: list[tuple[list[tuple[str, str]], str]] = [
    ([
        ("Maya", "Hi, I'm Maya. I live in Lisbon and I work at Tidewave."),
        ("assistant", "Welcome! How is the new job?"),
        ("Maya", "Good! The weather was lovely today, we walked along the river."),
        ("Maya", "My sister Ines is a nurse in Porto."),
        ("Maya", "I love green tea and I am vegetarian."),
        ("assistant", "Noted, green tea and vegetarian food."),
    ], "Where does Maya work?"),
    ([
        ("Maya", "Remind me to book a table for Ines's birthday on Friday."),
        ("Maya", "I had pastel de nata for breakfast again, it was great."),
        ("Maya", "Traffic on the bridge was terrible this morning."),
        ("Maya", "Traffic on the bridge was terrible again this evening."),
        ("Maya", "The traffic on the bridge is terrible every single day."),
        ("assistant", "Sorry about the traffic! Shall I look for restaurants?"),
    ], "What should I remember for the birthday dinner?"),
    ([
        ("Maya", "Work was busy, three meetings back to back."),
        ("Maya", "My card number is 4111 1111 1111 1111, keep it safe."),
        ("assistant", "I would rather not keep card numbers; please don't share them."),
        ("Maya", "Actually, I live in Porto now, I moved last week."),
        ("Maya", "I watched a documentary about octopuses, they taste with their arms."),
    ], "Where does Maya live and what does she eat?"),
]


def _line(out: TextIO, text: str = "") -> None:
    out.write(text + "\n")


def _open(path: Path, budget: int) -> MemoryStore:
    return MemoryStore.open(path, budget=budget, policy="hybrid", nlp="rules")


def run(path: Path, budget: int = 160, out: TextIO = sys.stdout) -> dict[str, int]:
    """Play the sessions against a store at ``path``; returns counts for tests."""
    for number, (turns, question) in enumerate(SESSIONS, start=1):
        with _open(path, budget) as store:
            held = store.stats().get("namespaces", {}).get("maya", {}).get("active", 0)
            _line(out, f"── session {number}: reopened {path} ({held} memories active)")
            for speaker, text in turns:
                role = "assistant" if speaker == "assistant" else "user"
                nodes = store.observe(role, text, namespace="maya", speaker=speaker
                                      if role == "user" else None,
                                      conversation_id=f"session-{number}")
                for n in nodes[1:]:
                    _line(out, f"   + {n.type.value}: {n.content}")
            store.maintain("maya")
            _line(out, f"   Q: {question}")
            context = store.render_context(question, namespace="maya", budget_tokens=160,
                                           conversation=f"session-{number}", active_turns=1)
            _line(out, "   " + context.replace("\n", "\n   "))
    return _report(path, budget, out)


def _report(path: Path, budget: int, out: TextIO) -> dict[str, int]:
    with _open(path, budget) as store:
        st = store.stats("maya")["namespaces"]["maya"]
        _line(out)
        _line(out, f"── kept ({st['tokens']} of {st['budget']} tokens):")
        for n in store.list("maya"):
            _line(out, f"   {n.type.value:<9} s={n.sensitivity:.2f} used {n.access_count}x  "
                       f"{n.content[:70]}")
        _line(out, "── forgotten (in the archive, explainable):")
        for n in store.list("maya", status=MemoryStatus.ARCHIVED):
            _line(out, f"   {n.content[:60]}")
            _line(out, f"      why: {store.explain(n.id).rationale}")
        receipt = store.erase(entity="Ines", namespace="maya")
        _line(out, "── right to be forgotten: erase(entity='Ines')")
        _line(out, "   " + receipt.render().replace("\n", "\n   "))
        report = store.verify()
        _line(out, f"── audit: {report.checked} events, chain "
                   f"{'verified' if report.ok else 'BROKEN: ' + report.reason}")
        return {"active": st["active"], "archived": st["archived"], "events": report.checked,
                "verified": int(report.ok), "erased": len(receipt.erased)}


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--path", type=Path, default=Path("./mars_data/demo"))
    parser.add_argument("--budget", type=int, default=160)
    parser.add_argument("--fresh", action="store_true", help="delete the demo store first")
    args = parser.parse_args(argv)
    if args.fresh and args.path.exists():
        shutil.rmtree(args.path)
    counts = run(args.path, args.budget)
    return 0 if counts["verified"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
