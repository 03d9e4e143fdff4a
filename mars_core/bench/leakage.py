"""``mars bench leakage``: what the output check keeps from a reader, and what it costs.

One table, three parts (issue 30):

**1. The privacy corpus through the store's exits.** A deterministic conversation mixes
chit-chat and harmless facts with every identifier of
:data:`~mars_core.bench.privacy_corpus.DETECTOR_POSITIVES` (phone numbers in the
formats of twelve countries, e-mail addresses, IBANs, payment cards, national ids), the
special-category statements of
:data:`~mars_core.bench.privacy_corpus.PROTECTED_STATEMENTS` (health, sexual
orientation, gender identity, religion, politics, union, disability, criminal record,
ethnicity) and the restatements of :data:`RESTATED`: five sensitive memories — detected
or marked by their caller (``add(..., sensitivity=0.9)``) — said again in other words by
the assistant and by a summary note, and one more erased once its restatements were
stored. Each item is asked for (its own words as the question) through
``render_context`` and ``retrieve``, and every memory goes through ``check_output`` (what
the framework adapters call). **A raw leak** is:

* an identifier whose value appears in what the exit returns (digits compared without
  separators, so a reformatted card still counts);
* a special-category statement one of whose words appears (whole words, any case);
* a restatement whose line — its rendered line, its hit, its checked text — still shows
  one of the words that give its fact away (:attr:`Restated.giveaway`: "virus",
  "positive"; "men"; "7319"...), counted once per restatement over all questions.

Configurations: ``off`` (the same store read with ``redact=False``), ``on`` (the
defaults) and ``private`` (the defaults and private mode: memories above σ = 0.5 are not
recalled without consent). Also counted: the harmless facts ``render_context`` still
shows (out of 4).

**2. The development conversations** (``--data``: LoCoMo; the users' path of
:mod:`mars_core.bench.users_path`): each conversation observed once, every question
read with the check off and on — evidence recall of ``retrieve`` (hits filling 128
words) and of ``render_context`` (a masked line counts when ≥ 60 % of its content words
are readable), and their ratio.

**3. The assistant evaluation** (:mod:`mars_core.bench.assistant`): its questions read
through ``render_context`` with the check off and on — answered, and passed.

The embedder is the one ``MemoryStore`` picks (``default``), or ``hashing`` / ``minilm``.

Examples:
    >>> [c.kind for c in RESTATED][:2]
    ['health', 'sexuality']
    >>> card = "4111 1111 1111 1111"
    >>> leaks("card [CARD] on file", card), leaks("4111111111111111", card)
    (False, True)
"""

from __future__ import annotations

import json
import os
import random
import re
import statistics
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from mars_core.bench.privacy_corpus import DETECTOR_POSITIVES, PROTECTED_STATEMENTS
from mars_core.bench.report import results_dir
from mars_core.clock import FakeClock
from mars_core.embeddings import Embedder
from mars_core.errors import ValidationError
from mars_core.privacy.masking import shows
from mars_core.progress import ProgressFn, report
from mars_core.store import MemoryStore

__all__ = ["CONFIGS", "EMBEDDERS", "EXITS", "RESTATED", "Planted", "Restated", "corpus",
           "leaks", "main", "run", "run_assistant", "run_corpus", "run_locomo"]

EMBEDDERS: Final = ("default", "hashing", "minilm")
"""``default``: what ``MemoryStore()`` picks (``$MARS_EMBEDDER``, else MiniLM when
installed); ``hashing`` and ``minilm`` force one."""

CONFIGS: Final = ("off", "on", "private")
"""The corpus' configurations (see the module)."""

EXITS: Final = ("render_context", "retrieve", "check_output")
"""The store's exits the corpus goes through."""

_CHAT = ["the weather was nice today", "I watched a film about whales", "work was busy",
         "we had pizza for dinner", "the train was late again", "I went for a run",
         "my plants need water", "the match last night was exciting"]
_HARMLESS = [("I love jazz music", "jazz"), ("my favourite colour is green", "green"),
             ("I play the violin on Sundays", "violin"), ("I am learning Portuguese", "Portuguese")]


@dataclass(frozen=True, slots=True)
class Planted:
    """One item of the corpus.

    Attributes:
        kind: an identifier kind (``phone``...) or a special category (``health``...).
        text: the turn that says it.
        secrets: what must not reach a reader: the identifier's value, or the words.
        identifier: whether ``secrets`` are identifiers (compared digit by digit).
    """

    kind: str
    text: str
    secrets: tuple[str, ...]
    identifier: bool


def corpus() -> list[Planted]:
    """The planted identifiers and special-category statements.

    Examples:
        >>> items = corpus()
        >>> len({p.kind for p in items if p.identifier}), len(items) > 90
        (5, True)
    """
    return [*(Planted(k.value, t, (v,), True) for t, k, v in DETECTOR_POSITIVES),
            *(Planted(c, t, w, False) for c, t, w in PROTECTED_STATEMENTS)]


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
        giveaway: the words that give the fact away in its restatements: a restatement
            whose line shows one of them leaks.
    """

    kind: str
    original: str
    how: Literal["detected", "marked", "erased"]
    restatements: tuple[tuple[str, str], ...]
    probe: str
    giveaway: tuple[str, ...]


RESTATED: Final = (
    Restated("health", "My HIV test came back positive", "detected", (
        ("assistant", "I'm sorry the virus test came back positive"),
        ("summary", "User got a positive result on a blood test for a virus"),
    ), "what did my test show?", ("virus", "positive")),
    Restated("sexuality", "I came out as gay to my parents last weekend", "detected", (
        ("assistant", "It was brave to tell your parents that you like men"),
        ("summary", "User recently told their parents that he is attracted to men"),
    ), "what did I tell my parents?", ("men",)),
    Restated("finance", "We are three months behind on the mortgage", "marked", (
        ("assistant", "Being three months behind on the house payments is stressful"),
        ("summary", "User has missed three monthly mortgage payments"),
    ), "how are we doing with the house payments?", ("behind", "missed", "mortgage")),
    Restated("credentials", "The alarm code for the house is 7319", "marked", (
        ("assistant", "Noted: 7319 disarms the alarm at your house"),
        ("summary", "The user's house alarm code is 7319"),
    ), "what is the alarm code?", ("7319",)),
    Restated("location", "We are away until the 20th and the house is empty", "marked", (
        ("assistant", "Enjoy the trip, and I hope the empty house stays safe until the 20th"),
        ("summary", "User's house is empty until the 20th while they are away"),
    ), "when is the house empty?", ("empty",)),
    Restated("health", "I was diagnosed with bipolar disorder in May", "erased", (
        ("assistant", "How have the manic episodes been since May?"),
        ("summary", "User learned in May that they have a mood condition with manic phases"),
    ), "what was I diagnosed with in May?", ("manic", "mood")),
)
"""The sensitive memories that are restated, and how (see the module)."""


def _digits(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.casefold())


def leaks(text: str, secret: str, *, identifier: bool = True) -> bool:
    """Whether ``text`` shows ``secret``: an identifier verbatim (any case) or, with 8
    digits or more, digit for digit whatever its separators; a word as a whole word."""
    if not identifier:
        return re.search(rf"(?<!\w){re.escape(secret)}(?!\w)", text, re.IGNORECASE) is not None
    return secret.casefold() in text.casefold() or (
        sum(c.isdigit() for c in secret) >= 8 and _digits(secret) in _digits(text))


def _embedder(name: str) -> Embedder | None:
    if name not in EMBEDDERS:
        raise ValidationError(f"embedder must be one of {', '.join(EMBEDDERS)}, not {name!r}")
    if name == "default":
        return None
    from mars_core.embedders import default_embedder

    return default_embedder(prefer="semantic" if name == "minilm" else "hashing")


# --- part 1: the corpus ---------------------------------------------------------------------


def _turns(seed: int) -> list[str]:
    """The conversation: chit-chat between every planted item and harmless fact."""
    rng = random.Random(seed)
    out: list[str] = []
    for text in [p.text for p in corpus()] + [t for t, _ in _HARMLESS]:
        out += [rng.choice(_CHAT), text]
    return out


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


def _ask(text: str) -> str:
    """A question in an item's own words (not the text itself: render_context does not
    show a memory as the evidence of its own words)."""
    return f"tell me about this: {text}"


@dataclass
class _Reads:
    """What one configuration's exits returned over all questions."""

    texts: dict[str, list[str]]
    restated: dict[str, dict[str, list[str]]]  # exit -> restatement text -> shown texts
    useful: int


def _read(store: MemoryStore, redact: bool, progress: ProgressFn | None, done: int,
          total: int) -> _Reads:
    restatements = {t for f in RESTATED for _, t in f.restatements}
    reads = _Reads({e: [] for e in EXITS}, {e: {t: [] for t in restatements} for e in EXITS}, 0)
    raw = {n.id: n.content for n in store.list(status=None)}
    questions = [_ask(p.text) for p in corpus()] + [
        q for f in RESTATED for q in (f.probe, _ask(f.original), *(_ask(t) for _, t in
                                                                   f.restatements))]
    for n, q in enumerate(questions):
        ctx = store.render_context(q, budget_tokens=300, conversation="other", redact=redact)
        hits = store.retrieve(q, k=5, redact=redact)
        reads.texts["render_context"].append(ctx)
        reads.texts["retrieve"].append("\n".join(h.text for h in hits))
        for line in ctx.splitlines():
            body = line.split("] ", 1)[1] if line.startswith("- [") and "] " in line else ""
            for t in restatements:
                if body and shows(body, t):
                    reads.restated["render_context"][t].append(body)
        for h in hits:
            if raw.get(h.id) in restatements:
                reads.restated["retrieve"][raw[h.id]].append(h.text)
        report(progress, "questions", done + n + 1, total)
    nodes = store.list(status=None)
    for node, s in zip(nodes, store.check_output(nodes, redact=redact), strict=True):
        shown = "" if s.node is None else s.node.content
        reads.texts["check_output"].append(shown)
        if node.content in restatements:
            reads.restated["check_output"][node.content].append(shown)
    reads.useful = sum(word.casefold() in store.render_context(
        f"what do I like? {word}", budget_tokens=300, conversation="other",
        redact=redact).casefold() for _, word in _HARMLESS)
    return reads


def _count(reads: _Reads, exit_: str) -> dict[str, Any]:
    """The leaks of one exit."""
    text = "\n".join(reads.texts[exit_])
    items = corpus()
    ids = [p for p in items if p.identifier and any(leaks(text, s) for s in p.secrets)]
    words = [p for p in items if not p.identifier
             and any(leaks(text, s, identifier=False) for s in p.secrets)]
    kept: list[str] = []
    erased: list[str] = []
    for fact in RESTATED:
        for _, t in fact.restatements:
            shown = reads.restated[exit_][t]
            if any(leaks(s, w, identifier=False) for s in shown for w in fact.giveaway):
                (erased if fact.how == "erased" else kept).append(f"{fact.kind}:{t[:30]}")
    return {"identifiers": sum(p.identifier for p in items), "identifiers_leaked": len(ids),
            "statements": sum(not p.identifier for p in items),
            "statements_leaked": len(words), "leaked": sorted({p.kind for p in ids + words}),
            "restatements": sum(len(f.restatements) for f in RESTATED if f.how != "erased"),
            "restatements_leaked": len(kept),
            "erased_restatements": sum(len(f.restatements) for f in RESTATED
                                       if f.how == "erased"),
            "erased_restatements_leaked": len(erased),
            "leaked_restatements": sorted(kept + erased)}


def _corpus_store(seed: int, embedder: Embedder | None, private: bool,
                  progress: ProgressFn | None) -> MemoryStore:
    store = MemoryStore(clock=FakeClock(), nlp="rules", budget=8000, seed=seed,
                        embedder=embedder)
    if private:
        store.set_preferences({"private_mode": True})
    turns = _turns(seed)
    store.observe_many([{"role": "user", "text": t, "turn": i, "speaker": "Maya"}
                        for i, t in enumerate(turns)], conversation_id="c")
    report(progress, "turns", len(turns), len(turns))
    for node_id in _plant_restated(store, len(turns)):
        store.erase(node_id=node_id)
    return store


def run_corpus(seed: int = 7, embedder: str = "default",
               progress: ProgressFn | None = None) -> list[dict[str, Any]]:
    """Part 1: one row per configuration and exit (``progress``: stages ``turns`` and
    ``questions``).

    Raises:
        ValidationError: an unknown ``embedder``.
    """
    emb = _embedder(embedder)
    questions = len(corpus()) + sum(2 + len(f.restatements) for f in RESTATED)
    rows = []
    for private in (False, True):
        with _corpus_store(seed, emb, private, progress) as store:
            for config, redact in ((("private", True),) if private
                                   else (("off", False), ("on", True))):
                reads = _read(store, redact, progress, 0, questions)
                rows += [{"config": config, "exit": e, "embedder": store.embedder.name,
                          "useful_recall": reads.useful, "harmless": len(_HARMLESS),
                          **_count(reads, e)} for e in EXITS]
    return rows


# --- parts 2 and 3: what it costs ------------------------------------------------------------


def _latency(store: MemoryStore, questions: Sequence[str]) -> dict[str, dict[str, float]]:
    """Median ms of ``retrieve`` and ``render_context`` with the check off and on,
    interleaved question by question (the order alternating), and on / off."""
    took: dict[tuple[str, bool], list[float]] = {}
    for i, q in enumerate(questions):
        for redact in ((False, True) if i % 2 else (True, False)):
            t0 = time.perf_counter()
            store.retrieve(q, redact=redact)
            t1 = time.perf_counter()
            store.render_context(q, redact=redact)
            t2 = time.perf_counter()
            took.setdefault(("retrieve", redact), []).append(1000 * (t1 - t0))
            took.setdefault(("render", redact), []).append(1000 * (t2 - t1))
    out = {}
    for name in ("retrieve", "render"):
        off, on = (statistics.median(took[name, r]) for r in (False, True))
        out[name] = {"off_ms": off, "on_ms": on, "ratio": on / off if off else 1.0}
    return out


def run_locomo(data: str | os.PathLike[str], embedder: str = "default", quick: bool = False,
               progress: ProgressFn | None = None) -> dict[str, Any]:
    """Part 2: evidence recall on the development conversations, the check off and on
    (``quick``: 2 conversations × 150 turns × 25 questions).

    Raises:
        ValidationError: an unknown ``embedder`` or an unreadable data file.
    """
    from mars_core.bench import locomo as L
    from mars_core.bench.evidence import _quick, default_bench_embedder
    from mars_core.bench.locomo_data import load_locomo
    from mars_core.bench.users_path import USERS_BUDGETS, ingest, question_items, read

    chosen = _embedder(embedder)
    convs = load_locomo(data)
    if quick:
        convs = _quick(convs, 2, 150, 25)
    emb = L.CachedEmbedder(chosen or default_bench_embedder(False))
    sums = {k: [0.0, 0.0] for k in ("render", "retrieve")}
    n = masked = 0
    latency: dict[str, dict[str, float]] = {}
    for c, cd in enumerate(L.prepare(convs, emb)):
        with MemoryStore(embedder=emb, seed=0) as store:
            ing = ingest(cd, store)
            if c == 0:  # the questions' vectors are cached: the check's own cost shows
                latency = _latency(store, [q.question for q in cd.questions])
            for slot, redact in enumerate((False, True)):
                rd = read(cd, store, ing, read_budget=4 * max(USERS_BUDGETS), redact=redact)
                masked += rd.masked if redact else 0
                items = question_items(cd, rd, USERS_BUDGETS)
                for key, name in ((("users-path-render", "render", rd.render_budget),
                                   "render"), (("users-path", "words", 128), "retrieve")):
                    sums[name][slot] += sum(m["recall"] for cat, m, _ in items[key]
                                            if cat in L.CATEGORIES)
        n += sum(1 for q in cd.questions if q.category in L.CATEGORIES)
        report(progress, "conversations", c + 1, len(convs))
    out: dict[str, Any] = {"conversations": len(convs), "questions": n, "embedder": emb.name,
                           "quick": quick, "masked_lines": masked, "latency": latency}
    for name, (off, on) in sums.items():
        out[name] = {"off": off / max(1, n), "on": on / max(1, n),
                     "ratio": on / off if off else 1.0}
    return out


def run_assistant(embedder: str = "default", progress: ProgressFn | None = None
                  ) -> dict[str, Any]:
    """Part 3: the assistant evaluation's questions, the check off and on."""
    from mars_core.bench import assistant

    with tempfile.TemporaryDirectory(prefix="mars-bench-leakage-") as tmp, \
            assistant.open_store(Path(tmp), embedder) as store:
        assistant.ingest(store, progress=progress)
        reports = {name: assistant.evaluate(store, redact=redact)
                   for name, redact in (("off", False), ("on", True))}
    return {"questions": len(reports["on"].results), "embedder": reports["on"].embedder,
            **{name: {"answered": r.answered, "passed": r.passed}
               for name, r in reports.items()}}


def run(seed: int = 7, embedder: str = "default", *, data: str | os.PathLike[str] | None = None,
        quick: bool = False, assistant: bool = True,
        progress: ProgressFn | None = None) -> dict[str, Any]:
    """All three parts (the development conversations when ``data`` is given)."""
    return {"corpus": run_corpus(seed, embedder, progress),
            "locomo": None if data is None else run_locomo(data, embedder, quick, progress),
            "assistant": run_assistant(embedder, progress) if assistant else None}


def _corpus_lines(rows: Sequence[dict[str, Any]]) -> Iterable[str]:
    by = {(r["config"], r["exit"]): r for r in rows}
    first = rows[0]
    for label, key, total in (
            ("identifiers leaked", "identifiers_leaked", first["identifiers"]),
            ("special-category statements leaked", "statements_leaked", first["statements"]),
            ("restatements leaked", "restatements_leaked", first["restatements"]),
            ("restatements of the erased memory leaked", "erased_restatements_leaked",
             first["erased_restatements"])):
        for e in EXITS:
            cells = " | ".join(f"{by[c, e][key]} / {total}" for c in CONFIGS)
            yield f"| corpus | {label}: {e} | {cells} |"
    cells = " | ".join(f"{by[c, 'render_context']['useful_recall']} / {first['harmless']}"
                       for c in CONFIGS)
    yield f"| corpus | harmless facts shown: render_context | {cells} |"


def table(result: dict[str, Any]) -> str:
    """The one table of the run, as markdown: the check off, on (the defaults), and on
    with private mode; the cost in evidence as on against off."""
    lines = [f"embedder: {result['corpus'][0]['embedder']}", "",
             "| part | measure | off | on (defaults) | private mode |", "|---|---|---|---|---|",
             *_corpus_lines(result["corpus"])]
    loco = result.get("locomo")
    if loco is not None:
        for name, what in (("retrieve", "retrieve (128 words)"), ("render", "render_context")):
            r = loco[name]
            lines.append(f"| development conversations ({loco['questions']} questions) | "
                         f"evidence recall: {what} | {r['off']:.3f} | {r['on']:.3f} "
                         f"({r['ratio']:.3f}× off) | – |")
        for name, what in (("retrieve", "retrieve"), ("render", "render_context")):
            r = loco["latency"][name]
            lines.append(f"| development conversations (first, interleaved) | median ms: "
                         f"{what} | {r['off_ms']:.1f} | {r['on_ms']:.1f} ({r['ratio']:.2f}× "
                         "off) | – |")
    asst = result.get("assistant")
    if asst is not None:
        for key in ("answered", "passed"):
            lines.append(f"| assistant evaluation | questions {key} | {asst['off'][key]} / "
                         f"{asst['questions']} | {asst['on'][key]} / {asst['questions']} | – |")
    return "\n".join(lines)


def main(out: str | os.PathLike[str] | None = None, seed: int = 7,
         progress: ProgressFn | None = None, embedder: str = "default", *,
         data: str | os.PathLike[str] | None = None, quick: bool = False,
         assistant: bool = True) -> dict[str, Any]:
    """Run, print the table (and write ``leakage.json`` and ``leakage.md`` to ``out``,
    made before the run)."""
    folder = None if out is None else results_dir(out)
    result = run(seed, embedder, data=data, quick=quick, assistant=assistant,
                 progress=progress)
    text = table(result)
    print(text)
    if folder is not None:
        (folder / "leakage.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
        (folder / "leakage.md").write_text(text + "\n", encoding="utf-8")
    return result
