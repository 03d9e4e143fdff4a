"""The users' path of the evidence benchmarks: ``observe`` into ``MemoryStore.open`` with
its defaults, read through ``retrieve`` and ``render_context`` (issue 18, item 1).

Each conversation is ingested turn by turn as the adapters do it —
``store.observe(role, message, speaker=..., at=..., conversation_id=...)``, the message
without its ``"speaker: "`` prefix — into a store made by :meth:`MemoryStore.open` in a
fresh directory with the default budget, policy and token counter, and the benchmark's
embedder (MiniLM when installed; the store's own default too). Only the seed is set
(``seed=0``: ids, and so tie order, are replayable). Nothing is fitted inside the run.

Reads, once per question, both counted as accesses as a user's are:

* ``retrieve(q, budget_tokens=4 × the largest word budget)`` — its hits map to turns
  through provenance
  (an extracted fact counts for the turn it was derived from), in rank order, and fill
  each budget of whitespace words of ``"speaker: text"`` greedily (the reference
  protocol, :func:`~mars_core.bench.locomo.select_budget`'s rule); the same hits packed
  by their own store tokens give the ``"store"`` rows (what ``retrieve(q,
  budget_tokens=b)`` returns: packing is greedy after the cut-off);
* ``render_context(q)`` at its default size — a turn counts as shown when a rendered line
  is its text or the text of a memory derived from it, as the output check lets it out:
  a line with some spans masked (``[HEALTH]``, ``[PHONE]``...) counts when at least
  :data:`READABLE` of its content words are still readable (the bar the leakage
  benchmark sets for a restatement to count as leaked).

Also reported: the share of each question's gold turns still active and archived after
ingest, and latency medians (``observe`` per turn, ``retrieve`` and ``render_context``
per question).

Examples:
    >>> parse_when("1:56 pm on 8 May, 2023").isoformat()
    '2023-05-08T13:56:00+00:00'
    >>> parse_when("2023/05/20 (Sat) 02:21").hour, parse_when("someday") is None
    (2, True)
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from mars_core.bench.locomo import CATEGORIES, ConvData, question_metrics
from mars_core.bench.locomo_data import Turn
from mars_core.embeddings import Embedder
from mars_core.model import MemoryNode, MemoryStatus
from mars_core.privacy.masking import MASK, readable_share, shows
from mars_core.reading.context import (
    HEADER_ACTIVE,
    HEADER_RECALLED,
    HEADER_STRUCTURED,
    HEADER_SUPPORT,
)

if TYPE_CHECKING:
    from mars_core.store import MemoryStore

__all__ = ["READABLE", "ROLES", "USERS_BUDGETS", "Ingested", "Reading", "fill_words",
           "ingest", "observe_args", "parse_when", "question_items", "read",
           "read_conversation", "shown_turns", "users_path_task"]

READABLE = 0.6
"""Share of a memory's content words a masked line must still show to count as showing
it (:func:`~mars_core.privacy.masking.readable_share`)."""

USERS_BUDGETS: tuple[int, ...] = (64, 128, 256)
"""Whitespace-word budgets of the reference protocol."""

ROLES = frozenset({"user", "assistant", "system", "tool", "human", "ai"})
"""Speakers that are chat roles (LongMemEval): observed with ``role=speaker`` and no
``speaker=``, as a chat adapter stores them; any other speaker (a LoCoMo name) is a
person talking, observed as ``role="user", speaker=name``."""

_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%Y/%m/%d (%a) %H:%M",
            "%Y/%m/%d %H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%d")


def parse_when(text: str | None) -> datetime | None:
    """A session date of LoCoMo (``"1:56 pm on 8 May, 2023"``) or LongMemEval
    (``"2023/05/20 (Sat) 02:21"``) as an aware UTC datetime; ``None`` when unknown."""
    if not text:
        return None
    for fmt in _FORMATS:
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def observe_args(turn: Turn, conversation_id: str) -> dict[str, Any]:
    """The keyword arguments of ``store.observe`` for one benchmark turn, as an adapter
    would pass them: the message without the ``"speaker: "`` prefix.

    Examples:
        >>> t = Turn("D1:1", "Ana", "Ana: I moved to Lisbon", 1, "1:56 pm on 8 May, 2023")
        >>> a = observe_args(t, "c0")
        >>> a["role"], a["text"], a["speaker"], a["conversation_id"]
        ('user', 'I moved to Lisbon', 'Ana', 'c0')
    """
    prefix = f"{turn.speaker}: "
    text = turn.text[len(prefix):] if turn.text.startswith(prefix) else turn.text
    is_role = turn.speaker.casefold() in ROLES
    return {"role": turn.speaker if is_role else "user", "text": text,
            "speaker": None if is_role else turn.speaker, "at": parse_when(turn.date),
            "conversation_id": conversation_id}


@dataclass
class Reading:
    """What one conversation's users' path measured (per question lists, in order)."""

    retrieved: list[list[str]] = field(default_factory=list)
    """Turn ids of each question's ``retrieve`` hits, in rank order (may repeat)."""
    store_cost: list[list[int]] = field(default_factory=list)
    """The hits' own store-token weights, aligned with ``retrieved``."""
    shown: list[set[str]] = field(default_factory=list)
    """Turn ids ``render_context`` showed for each question."""
    render_words: list[int] = field(default_factory=list)
    render_budget: int = 0
    """``render_context``'s default size (store tokens)."""
    active: set[str] = field(default_factory=set)
    archived: set[str] = field(default_factory=set)
    observe_ms: list[float] = field(default_factory=list)
    retrieve_ms: list[float] = field(default_factory=list)
    render_ms: list[float] = field(default_factory=list)
    masked: int = 0
    """Lines of ``render_context`` that counted as showing a turn with spans masked."""


def _turn_of(node: MemoryNode, turns: Mapping[str, str]) -> str | None:
    if node.id in turns:
        return turns[node.id]
    return next((turns[i] for i in node.provenance.derived_from if i in turns), None)


def _rendered_texts(context: str) -> list[str]:
    """The memory texts of a rendered context (one per ``- [tags] text`` line)."""
    heads = {HEADER_ACTIVE, HEADER_RECALLED, HEADER_STRUCTURED, HEADER_SUPPORT}
    out = []
    for line in context.splitlines():
        if line in heads or not line.startswith("- [") or "] " not in line:
            continue
        out.append(line.split("] ", 1)[1])
    return out


def shown_turns(context: str, by_text: Mapping[str, set[str]]) -> tuple[set[str], int]:
    """The turns a rendered context shows (``by_text``: a memory's whitespace-normalised
    text → the turns it counts for), and how many lines counted with masked spans.

    Examples:
        >>> shown_turns("- [episodic | Ana] I moved to Lisbon, call me on [PHONE]",
        ...             {"I moved to Lisbon, call me on 555-123-4567": {"D1:2"}})
        ({'D1:2'}, 1)
        >>> shown_turns("- [episodic | Ana] [HEALTH]", {"I have diabetes": {"D1:3"}})
        (set(), 0)
    """
    out: set[str] = set()
    masked = 0
    for body in _rendered_texts(context):
        if body in by_text:
            out |= by_text[body]
        elif MASK.search(body):
            for text, turns in by_text.items():
                if shows(body, text):
                    if readable_share(body, text) >= READABLE:
                        out |= turns
                        masked += 1
                    break
    return out, masked


@dataclass
class Ingested:
    """What ingesting one conversation left: which turn each stored memory counts for."""

    turn_of: dict[str, str] = field(default_factory=dict)
    """Memory id → the turn it is (its episode) or was derived from."""
    episode: dict[str, str] = field(default_factory=dict)
    """Episode id → its turn."""
    by_text: dict[str, set[str]] = field(default_factory=dict)
    """A memory's whitespace-normalised text → the turns it counts for."""
    observe_ms: list[float] = field(default_factory=list)


def ingest(cd: ConvData, store: MemoryStore, *, thread_per_session: bool = False
           ) -> Ingested:
    """Observe every turn of ``cd`` into ``store`` as an adapter would (see the module).

    Args:
        cd: the prepared conversation.
        store: the store (the benchmark's opened with :meth:`MemoryStore.open`).
        thread_per_session: one ``conversation_id`` per session (LongMemEval's separate
            chats) instead of one per conversation (LoCoMo's ongoing dialogue).
    """
    ing = Ingested()
    for turn in cd.conv.turns:
        conv = f"{cd.conv.sample_id}/s{turn.session}" if thread_per_session \
            else cd.conv.sample_id
        t0 = time.perf_counter()
        nodes = store.observe(**observe_args(turn, conv))
        ing.observe_ms.append((time.perf_counter() - t0) * 1000)
        if nodes:
            ing.episode[nodes[0].id] = turn.dia_id
        for n in nodes:
            ing.turn_of[n.id] = turn.dia_id
            ing.by_text.setdefault(" ".join(n.content.split()), set()).add(turn.dia_id)
    return ing


def read(cd: ConvData, store: MemoryStore, ing: Ingested, *, read_budget: int = 1024,
         redact: bool | None = None) -> Reading:
    """Every question of ``cd`` read back through ``retrieve`` and ``render_context``.

    ``read_budget`` is ``retrieve``'s token budget: large enough that the store's packing
    never binds before the word budgets do (a word is at least one store token, so 4× the
    largest word budget leaves room for the cut-off alone to decide what comes back).
    ``redact``: both reads' output check (None: the store's default, on).
    """
    rd = Reading(observe_ms=list(ing.observe_ms),
                 render_budget=store.config.retrieval.default_budget_tokens)
    status = {n.id: n.status for n in store.list(status=None) if n.id in ing.episode}
    rd.active = {t for i, t in ing.episode.items() if status.get(i) is MemoryStatus.ACTIVE}
    rd.archived = {t for i, t in ing.episode.items()
                   if status.get(i) is MemoryStatus.ARCHIVED}
    for q in cd.questions:
        t0 = time.perf_counter()
        hits = store.retrieve(q.question, budget_tokens=read_budget, redact=redact)
        rd.retrieve_ms.append((time.perf_counter() - t0) * 1000)
        pairs = [(_turn_of(h.node, ing.turn_of), h.node.weight) for h in hits]
        rd.retrieved.append([t for t, _ in pairs if t is not None])
        rd.store_cost.append([w for t, w in pairs if t is not None])
        t0 = time.perf_counter()
        context = store.render_context(q.question, redact=redact)
        rd.render_ms.append((time.perf_counter() - t0) * 1000)
        shown, masked = shown_turns(context, ing.by_text)
        rd.shown.append(shown)
        rd.masked += masked
        rd.render_words.append(len(context.split()))
    return rd


def read_conversation(cd: ConvData, embedder: Embedder, *, thread_per_session: bool = False,
                      store_kwargs: Mapping[str, Any] | None = None, read_budget: int = 1024,
                      in_memory: bool = False, directory: str | None = None) -> Reading:
    """Ingest one conversation through ``observe`` into a new store and read every
    question back (:func:`ingest`, then :func:`read`).

    Args:
        cd: the prepared conversation.
        embedder: the benchmark's embedder (passed to the store).
        thread_per_session: see :func:`ingest`.
        read_budget: see :func:`read`.
        store_kwargs: configuration overrides (ablations only; the headline passes none).
        in_memory: ``MemoryStore(...)`` (records in RAM, the numpy index) instead of
            ``MemoryStore.open`` in a directory: the same code path, minutes instead of an
            hour for an ablation (on LoCoMo it gives the same figures to the third decimal;
            only latency differs). The headline never sets it.
        directory: where the store's temporary directory is made (the system's default
            when ``None``).
    """
    from mars_core.store import MemoryStore

    kwargs = dict(store_kwargs or {})
    with tempfile.TemporaryDirectory(prefix="mars-users-", dir=directory) as tmp, \
            (MemoryStore(embedder=embedder, seed=0, **kwargs) if in_memory else
             MemoryStore.open(tmp, embedder=embedder, seed=0, **kwargs)) as store:
        return read(cd, store, ingest(cd, store, thread_per_session=thread_per_session),
                    read_budget=read_budget)


def fill_words(turns: Sequence[str], words: Mapping[str, int], budget: int
               ) -> tuple[list[str], int]:
    """Distinct turns in rank order, kept while their words still fit the budget.

    Examples:
        >>> fill_words(["a", "b", "a", "c"], {"a": 5, "b": 9, "c": 4}, 10)
        (['a', 'c'], 9)
    """
    chosen: list[str] = []
    used = 0
    for t in dict.fromkeys(turns):
        if used + words[t] <= budget:
            chosen.append(t)
            used += words[t]
    return chosen, used


def fill_store(turns: Sequence[str], cost: Sequence[int], budget: int
               ) -> tuple[list[str], int]:
    """``retrieve``'s own packing at ``budget`` store tokens: hits in rank order while they
    fit (the turns they count for, distinct)."""
    chosen: list[str] = []
    used = 0
    for t, w in zip(turns, cost, strict=True):
        if used + w <= budget:
            used += w
            chosen.append(t)
    return list(dict.fromkeys(chosen)), used


def _session(turn_id: str) -> str:
    return turn_id.rsplit(":", 1)[0]


def question_items(cd: ConvData, rd: Reading, budgets: Sequence[int]
                   ) -> dict[tuple[str, str, int], list[tuple[int, dict[str, float], float]]]:
    """Per (method, counter, budget): each question's category, metrics and latency."""
    words = dict(zip(cd.ids, (int(c) for c in cd.cost["words"]), strict=True))
    out: dict[tuple[str, str, int], list[tuple[int, dict[str, float], float]]] = {}
    for qi, q in enumerate(cd.questions):
        gold = set(q.evidence)
        gone = {"active_share": len(gold & rd.active) / len(gold),
                "archived_share": len(gold & rd.archived) / len(gold)}
        for b in budgets:
            for counter, (chosen, used) in (
                    ("words", fill_words(rd.retrieved[qi], words, b)),
                    ("store", fill_store(rd.retrieved[qi], rd.store_cost[qi], b))):
                m = question_metrics(chosen, q.evidence, used, b)
                m["session_recall"] = _session_recall(chosen, gold)
                out.setdefault(("users-path", counter, b), []).append(
                    (q.category, {**m, **gone}, rd.retrieve_ms[qi]))
        shown = sorted(rd.shown[qi])
        m = question_metrics(shown, q.evidence, 0, 1)
        del m["occupancy"]
        m["session_recall"] = _session_recall(shown, gold)
        out.setdefault(("users-path-render", "render", rd.render_budget), []).append(
            (q.category, {**m, "words": float(rd.render_words[qi]), **gone}, rd.render_ms[qi]))
    return out


def _session_recall(chosen: Iterable[str], gold: set[str]) -> float:
    want = {_session(g) for g in gold}
    return len(want & {_session(c) for c in chosen}) / len(want) if want else 0.0


_METRICS = ("precision", "recall", "f1", "occupancy", "session_recall", "active_share",
            "archived_share", "words")


def users_path_task(data: Sequence[ConvData], embedder: Embedder, *,
                    budgets: Sequence[int] = USERS_BUDGETS, thread_per_session: bool = False,
                    store_kwargs: Mapping[str, Any] | None = None, in_memory: bool = False,
                    method: str = "users-path",
                    tick: Callable[[], None] | None = None) -> list[dict[str, Any]]:
    """The users' path rows: ``users-path`` (``retrieve``; counters ``words`` and
    ``store``, one row per budget × category) and ``users-path-render`` (``render_context``
    at its default size, counter ``render``), each with the gold turns' active and archived
    shares after ingest; and one ``latency`` row (medians over turns and questions).

    ``method`` renames the rows (ablations run with ``store_kwargs``, and ``in_memory``:
    see :func:`read_conversation`).

    Examples:
        >>> from mars_core.bench import locomo as L
        >>> from mars_core.bench.locomo_data import Conversation, Question, Turn
        >>> from mars_core.embeddings import HashingEmbedder
        >>> turns = (Turn("D1:1", "Bo", "Bo: Where did you move?", 1, None),
        ...          Turn("D1:2", "Ana", "Ana: To Lisbon, last May.", 1, None))
        >>> conv = Conversation("c", turns, (Question("Where did Ana move?", "Lisbon", 4,
        ...                                           ("D1:2",)),), 0)
        >>> emb = L.CachedEmbedder(HashingEmbedder(dim=64))
        >>> rows = users_path_task(L.prepare([conv], emb), emb, in_memory=True)
        >>> [round(r["recall"], 2) for r in rows
        ...  if r["counter"] == "words" and r["budget"] == 128 and r["category"] == "all"]
        [1.0]
    """
    per: dict[tuple[str, str, int], list[tuple[int, dict[str, float], float]]] = {}
    observe_ms: list[float] = []
    retrieve_ms: list[float] = []
    render_ms: list[float] = []
    for cd in data:
        rd = read_conversation(cd, embedder, thread_per_session=thread_per_session,
                               store_kwargs=store_kwargs, read_budget=4 * max(budgets),
                               in_memory=in_memory)
        for key, items in question_items(cd, rd, budgets).items():
            per.setdefault(key, []).extend(items)
        observe_ms += rd.observe_ms
        retrieve_ms += rd.retrieve_ms
        render_ms += rd.render_ms
        if tick is not None:
            tick()
    rows: list[dict[str, Any]] = []
    for (name, counter, b), items in per.items():
        label = name.replace("users-path", method, 1)
        task = "render" if counter == "render" else "retrieval"
        for cat in ("all", *CATEGORIES):
            sel = [it for it in items if cat == "all" or it[0] == cat]
            if not sel:
                continue
            rows.append({"method": label, "task": task, "counter": counter, "budget": b,
                         "category": cat, "n": len(sel),
                         **{m: float(np.mean([it[1][m] for it in sel]))
                            for m in _METRICS if m in sel[0][1]},
                         "latency_ms": float(np.median([it[2] for it in sel])),
                         "latency_p95_ms": float(np.percentile([it[2] for it in sel], 95))})
    rows.append({"method": method, "task": "latency", "counter": "ms", "budget": 0,
                 "category": "all", "n": len(observe_ms),
                 "observe_p50_ms": _median(observe_ms), "retrieve_p50_ms": _median(retrieve_ms),
                 "render_p50_ms": _median(render_ms),
                 "observe_p95_ms": _pct(observe_ms, 95), "render_p95_ms": _pct(render_ms, 95)})
    return rows


def _median(xs: Sequence[float]) -> float:
    return float(np.median(xs)) if xs else math.nan


def _pct(xs: Sequence[float], p: float) -> float:
    return float(np.percentile(xs, p)) if xs else math.nan
