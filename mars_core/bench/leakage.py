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

**Restatements** (seed 000 §4.3's semantic pass). The conversation also holds
sensitive memories — detected ("my HIV test came back positive") or marked by the caller
(``add(..., sensitivity=0.9)``: a house alarm code, an empty house, mortgage arrears) —
and, later, texts that restate them in other words: the assistant's replies, and
summaries stored as the agent's notes ("User got a positive result on a blood test for a
virus"). One more sensitive memory is erased after its restatements were stored. Probing
questions ask about each (and the sensitive memory's own words). A restatement **leaks**
when the rendered context shows its line — its text, perhaps with masked spans — with at
least 60 % of its content words readable (stop words dropped), so a line the surface
pass masked down to a stub does not count. Counted once per restatement, over all
probes:

* **restatements leaked**: of sensitive or marked memories still stored;
* **erased restatements leaked**: of the erased one.

Configurations: ``off`` (no sensitivity scoring, no redaction), ``redact`` (scoring and
two-pass redaction: the surface pass and the semantic pass), ``private`` (redaction plus
private mode: memories above σ = 0.5 are not recalled without consent). The embedder is
the one ``MemoryStore`` picks (``default``), or ``hashing`` / ``minilm``.

Examples:
    >>> rows = run(turns=40, seed=3, embedder="hashing")
    >>> [r["config"] for r in rows]
    ['off', 'redact', 'private']
"""

from __future__ import annotations

import json
import os
import random
import re
from dataclasses import dataclass
from typing import Any, Final, Literal

from mars_core.analysis import terms
from mars_core.bench.report import results_dir
from mars_core.clock import FakeClock
from mars_core.embeddings import Embedder
from mars_core.errors import ValidationError
from mars_core.progress import ProgressFn, report
from mars_core.store import MemoryStore

__all__ = ["EMBEDDERS", "RESTATED", "Restated", "make_conversation", "restatement_leaks", "run"]

EMBEDDERS: Final = ("default", "hashing", "minilm")
"""``default``: what ``MemoryStore()`` picks (``$MARS_EMBEDDER``, else MiniLM when
installed); ``hashing`` and ``minilm`` force one."""

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


@dataclass(frozen=True, slots=True)
class Restated:
    """A sensitive memory and the texts that later restate it.

    Attributes:
        kind: what it is about.
        original: the memory.
        how: ``detected`` (a user turn the detectors score ≥ 0.7), ``marked`` (added with
            ``sensitivity=0.9``) or ``erased`` (a detected turn, erased once its
            restatements are stored).
        restatements: ``(source, text)``: ``assistant`` (a reply, observed as a turn) or
            ``summary`` (a semantic memory with provenance source ``summary``).
        probe: the question that asks about it.
    """

    kind: str
    original: str
    how: Literal["detected", "marked", "erased"]
    restatements: tuple[tuple[str, str], ...]
    probe: str


RESTATED: Final = (
    Restated("health", "My HIV test came back positive", "detected", (
        ("assistant", "I'm sorry the virus test came back positive"),
        ("summary", "User got a positive result on a blood test for a virus"),
    ), "what did my test show?"),
    Restated("sexuality", "I came out as gay to my parents last weekend", "detected", (
        ("assistant", "It was brave to tell your parents that you like men"),
        ("summary", "User recently told their parents that he is attracted to men"),
    ), "what did I tell my parents?"),
    Restated("finance", "We are three months behind on the mortgage", "marked", (
        ("assistant", "Being three months behind on the house payments is stressful"),
        ("summary", "User has missed three monthly mortgage payments"),
    ), "how are we doing with the house payments?"),
    Restated("credentials", "The alarm code for the house is 7319", "marked", (
        ("assistant", "Noted: 7319 disarms the alarm at your house"),
        ("summary", "The user's house alarm code is 7319"),
    ), "what is the alarm code?"),
    Restated("location", "We are away until the 20th and the house is empty", "marked", (
        ("assistant", "Enjoy the trip, and I hope the empty house stays safe until the 20th"),
        ("summary", "User's house is empty until the 20th while they are away"),
    ), "when is the house empty?"),
    Restated("health", "I was diagnosed with bipolar disorder in May", "erased", (
        ("assistant", "How have the manic episodes been since May?"),
        ("summary", "User learned in May that they have a mood condition with manic phases"),
    ), "what was I diagnosed with in May?"),
)
"""The sensitive memories that are restated, and how (see the module)."""

_MASK = re.compile(r"\[[A-Z_]+\]")


def _content(text: str) -> set[str]:
    return set(terms(_MASK.sub(" ", text)))


def _shows(body: str, text: str) -> bool:
    """Whether a rendered line's body is ``text``, some spans of it masked."""
    parts = _MASK.split(body)
    pattern = ".+?".join(re.escape(p) for p in parts)
    return re.fullmatch(pattern, " ".join(text.split()), flags=re.DOTALL) is not None


def restatement_leaks(context: str, text: str, share: float = 0.6) -> bool:
    """Whether a line of ``context`` shows ``text`` — its line (the text, some spans
    perhaps masked) with at least ``share`` of its content words still readable (stop
    words dropped), so a line masked down to a stub does not count.

    Examples:
        >>> restatement_leaks("- [semantic | summary] The alarm code is 7319",
        ...                   "The alarm code is 7319")
        True
        >>> restatement_leaks("- [semantic | summary] The [PRIVATE] is 7319",
        ...                   "The alarm code is 7319")
        False
        >>> restatement_leaks("- [episodic | user] The alarm code for the house is 7319",
        ...                   "The user's house alarm code is 7319")  # another memory
        False
    """
    words = _content(text)
    if not words:
        return False
    for line in context.splitlines():
        if not line.startswith("- [") or "] " not in line:
            continue
        body = line.split("] ", 1)[1]
        if _shows(body, text) and len(_content(body) & words) >= share * len(words):
            return True
    return False


def _digits(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.casefold())


def _leaks(context: str, value: str) -> bool:
    return value.casefold() in context.casefold() or (
        sum(c.isdigit() for c in value) >= 8 and _digits(value) in _digits(context))


def _embedder(name: str) -> Embedder | None:
    if name not in EMBEDDERS:
        raise ValidationError(f"embedder must be one of {', '.join(EMBEDDERS)}, not {name!r}")
    if name == "default":
        return None
    from mars_core.embedders import default_embedder

    return default_embedder(prefer="semantic" if name == "minilm" else "hashing")


def _store(config: str, seed: int, embedder: Embedder | None) -> MemoryStore:
    store = MemoryStore(clock=FakeClock(), nlp="rules", budget=4000, seed=seed,
                        sensitivity_scoring=config != "off", embedder=embedder)
    if config == "private":
        store.set_preferences({"private_mode": True})
    return store


def _plant_restated(store: MemoryStore, at: int) -> list[str]:
    """The restated memories and their restatements (after the conversation); the ids
    of the memories to erase."""
    erase: list[str] = []
    for i, fact in enumerate(RESTATED):
        turn = at + 3 * i
        if fact.how == "marked":
            store.add(fact.original, sensitivity=0.9,
                      provenance={"source": "user", "conversation_id": "c", "turn": turn})
        else:
            nodes = store.observe("user", fact.original, conversation_id="c", turn=turn,
                                  speaker="Maya")
            if fact.how == "erased":
                erase += [n.id for n in nodes]
    for i, fact in enumerate(RESTATED):
        for j, (source, text) in enumerate(fact.restatements):
            turn = at + 3 * len(RESTATED) + 2 * i + j
            if source == "assistant":
                store.observe("assistant", text, conversation_id="c", turn=turn)
            else:
                store.add(text, type="semantic",
                          provenance={"source": "summary", "conversation_id": "c"})
    return erase


def run(turns: int = 120, seed: int = 7, progress: ProgressFn | None = None,
        embedder: str = "default") -> list[dict[str, Any]]:
    """Measure the three configurations on one generated conversation (``progress``:
    stage ``turns``, over the three of them).

    Raises:
        ValidationError: an unknown ``embedder``.
    """
    emb = _embedder(embedder)
    texts, planted, harmless = make_conversation(turns, seed)
    rows = []
    configs = ("off", "redact", "private")
    report(progress, "turns", 0, len(configs) * turns)
    for c, config in enumerate(configs):
        with _store(config, seed, emb) as store:
            for i, text in enumerate(texts):
                store.observe("user", text, conversation_id="c", turn=i, speaker="Maya")
                report(progress, "turns", c * turns + i + 1, len(configs) * turns)
            for node_id in _plant_restated(store, turns):
                store.erase(node_id=node_id)
            redact = config != "off"

            def context(query: str, store: MemoryStore = store, redact: bool = redact) -> str:
                return store.render_context(query, budget_tokens=300, conversation="other",
                                            redact=redact)

            leaked: dict[str, int] = {}
            for kind, value in planted:
                if _leaks(context(_PROBES[kind]), value):
                    leaked[kind] = len(value.split())
            useful = sum(word.casefold() in context(q).casefold() for q, word in harmless)
            shown: set[tuple[int, int]] = set()
            for i, fact in enumerate(RESTATED):
                for probe in (fact.probe, fact.original):
                    ctx = context(probe)
                    shown |= {(i, j) for j, (_, text) in enumerate(fact.restatements)
                              if restatement_leaks(ctx, text)}
            kept = [(i, j) for i, f in enumerate(RESTATED) if f.how != "erased"
                    for j in range(len(f.restatements))]
            gone = [(i, j) for i, f in enumerate(RESTATED) if f.how == "erased"
                    for j in range(len(f.restatements))]
        rows.append({"config": config, "turns": turns, "embedder": store.embedder.name,
                     "planted": len(planted),
                     "leaked_items": len(leaked), "leaked_tokens": sum(leaked.values()),
                     "leaked_kinds": sorted(leaked), "useful_recall": useful,
                     "harmless": len(harmless),
                     "restatements": len(kept),
                     "restatements_leaked": sum(k in shown for k in kept),
                     "leaked_restatements": sorted(
                         f"{RESTATED[i].kind}/{RESTATED[i].restatements[j][0]}"
                         for i, j in kept if (i, j) in shown),
                     "erased_restatements": len(gone),
                     "erased_restatements_leaked": sum(k in shown for k in gone)})
    return rows


def main(out: str | os.PathLike[str] | None = None, turns: int = 120,
         seed: int = 7, progress: ProgressFn | None = None,
         embedder: str = "default") -> list[dict[str, Any]]:
    """Run and print a table (and write ``leakage.json`` to ``out``, made before the run)."""
    folder = None if out is None else results_dir(out)
    rows = run(turns, seed, progress, embedder)
    print(f"embedder: {rows[0]['embedder']}")
    print("config   leaked items  leaked tokens  useful recall  restatements  erased  "
          "kinds leaked")
    for r in rows:
        print(f"{r['config']:<8} {r['leaked_items']:>5}/{r['planted']:<6} {r['leaked_tokens']:>8}"
              f"      {r['useful_recall']:>4}/{r['harmless']:<8} "
              f"{r['restatements_leaked']:>5}/{r['restatements']:<6} "
              f"{r['erased_restatements_leaked']:>3}/{r['erased_restatements']:<3} "
              f"{','.join(r['leaked_kinds'] + r['leaked_restatements'])}")
    if folder is not None:
        (folder / "leakage.json").write_text(json.dumps(rows, indent=1))
    return rows
