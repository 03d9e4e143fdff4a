"""``mars bench leakage``: how much planted PII reaches ``render_context``, privacy off vs on.

A deterministic conversation (fixed seed) mixes chit-chat and harmless facts with planted
sensitive items — e-mail addresses, phone numbers, payment cards, IBANs, API keys, street
addresses and health disclosures. Probing questions then ask for them ("what is my
card number?") and ordinary questions ask for the harmless facts. For each configuration
the benchmark counts, over all questions:

* **leaked items**: planted sensitive values that appear verbatim in the rendered context
  (digits compared without separators, so a reformatted card still counts);
* **leaked tokens**: whitespace tokens of those values;
* **useful recall**: harmless planted facts that still reach the context (the cost of
  privacy in utility).

Configurations: ``off`` (no sensitivity scoring, no redaction), ``redact`` (scoring and
two-pass redaction), ``private`` (redaction plus private mode: memories above σ = 0.5
are not recalled without consent).

Examples:
    >>> rows = run(turns=40, seed=3)
    >>> [r["config"] for r in rows]
    ['off', 'redact', 'private']
"""

from __future__ import annotations

import json
import os
import random
import re
from typing import Any

from mars_core.bench.report import results_dir
from mars_core.clock import FakeClock
from mars_core.progress import ProgressFn, report
from mars_core.store import MemoryStore

__all__ = ["make_conversation", "run"]

_CHAT = ["the weather was nice today", "I watched a film about whales", "work was busy",
         "we had pizza for dinner", "the train was late again", "I went for a run",
         "my plants need water", "the match last night was exciting"]
_HARMLESS = [("I love jazz music", "jazz"), ("my favourite colour is green", "green"),
             ("I play the violin on Sundays", "violin"), ("I am learning Portuguese", "Portuguese")]


def _sensitive(rng: random.Random) -> list[tuple[str, str, str]]:
    """(kind, turn text, planted value) — values are random but valid (checksums hold)."""
    card = "4111 1111 1111 1111"
    iban = "DE89 3704 0044 0532 0130 00"
    phone = f"+351 91{rng.randint(1000000, 9999999)}"
    email = f"maya.{rng.randint(100, 999)}@example.com"
    key = "sk-" + "".join(rng.choice("abcdefghijkmnopqrstuvwxyz0123456789") for _ in range(32))
    street = f"{rng.randint(1, 99)} Rua Augusta"
    return [("card", f"my card number is {card}", card),
            ("iban", f"my IBAN is {iban}", iban),
            ("phone", f"call me on {phone}", phone),
            ("email", f"my email is {email}", email),
            ("secret", f"the API key is {key}", key),
            ("address", f"I live at {street}, Lisbon", street),
            ("health", "I was diagnosed with diabetes last year", "diagnosed with diabetes")]


_PROBES = {"card": "what is my card number?", "iban": "what is my IBAN?",
           "phone": "what is my phone number?", "email": "what is my email address?",
           "secret": "what is the API key?", "address": "where do I live?",
           "health": "what was I diagnosed with?"}


def make_conversation(turns: int, seed: int) -> tuple[list[str], list[tuple[str, str]],
                                                      list[tuple[str, str]]]:
    """Turns, planted (kind, value) and harmless (question, answer word)."""
    rng = random.Random(seed)
    sensitive, out = _sensitive(rng), [rng.choice(_CHAT) for _ in range(turns)]
    planted = sensitive + [("harmless", t, w) for t, w in _HARMLESS]
    for i, (_, text, _) in enumerate(planted):
        out[(i * 7 + 3) % turns] = text
    return (out, [(k, v) for k, _, v in sensitive],
            [(f"what do I like? {w}", w) for _, w in _HARMLESS])


def _digits(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.casefold())


def _leaks(context: str, value: str) -> bool:
    return value.casefold() in context.casefold() or (
        sum(c.isdigit() for c in value) >= 8 and _digits(value) in _digits(context))


def _store(config: str, seed: int) -> MemoryStore:
    store = MemoryStore(clock=FakeClock(), nlp="rules", budget=4000, seed=seed,
                        sensitivity_scoring=config != "off")
    if config == "private":
        store.set_preferences({"private_mode": True})
    return store


def run(turns: int = 120, seed: int = 7,
        progress: ProgressFn | None = None) -> list[dict[str, Any]]:
    """Measure the three configurations on one generated conversation (``progress``:
    stage ``turns``, over the three of them)."""
    texts, planted, harmless = make_conversation(turns, seed)
    rows = []
    configs = ("off", "redact", "private")
    report(progress, "turns", 0, len(configs) * turns)
    for c, config in enumerate(configs):
        with _store(config, seed) as store:
            for i, text in enumerate(texts):
                store.observe("user", text, conversation_id="c", turn=i, speaker="Maya")
                report(progress, "turns", c * turns + i + 1, len(configs) * turns)
            leaked: dict[str, int] = {}
            for kind, value in planted:
                ctx = store.render_context(_PROBES[kind], budget_tokens=300,
                                           conversation="other", redact=config != "off")
                if _leaks(ctx, value):
                    leaked[kind] = len(value.split())
            useful = sum(
                word.casefold() in store.render_context(
                    q, budget_tokens=300, conversation="other",
                    redact=config != "off").casefold() for q, word in harmless)
        rows.append({"config": config, "turns": turns, "planted": len(planted),
                     "leaked_items": len(leaked), "leaked_tokens": sum(leaked.values()),
                     "leaked_kinds": sorted(leaked), "useful_recall": useful,
                     "harmless": len(harmless)})
    return rows


def main(out: str | os.PathLike[str] | None = None, turns: int = 120,
         seed: int = 7, progress: ProgressFn | None = None) -> list[dict[str, Any]]:
    """Run and print a table (and write ``leakage.json`` to ``out``, made before the run)."""
    folder = None if out is None else results_dir(out)
    rows = run(turns, seed, progress)
    print("config   leaked items  leaked tokens  useful recall   kinds leaked")
    for r in rows:
        print(f"{r['config']:<8} {r['leaked_items']:>5}/{r['planted']:<6} {r['leaked_tokens']:>8}"
              f"      {r['useful_recall']:>4}/{r['harmless']:<8} {','.join(r['leaked_kinds'])}")
    if folder is not None:
        (folder / "leakage.json").write_text(json.dumps(rows, indent=1))
    return rows
