"""Replay a FiFA world through one memory store per cast agent, and judge every answer.

Each cast agent owns a :class:`~mars_core.store.MemoryStore` (in-memory backend,
``HashingEmbedder``, a ``FakeClock`` set to the world's time, the policy and budget under
test). The agent runtime is thin and the same for every policy: it writes what it
witnessed with ``add`` (typed by the event, styled by its archetype), links goal
prerequisites with ``requires`` edges when its archetype keeps structured tasks, runs
TTL maintenance at lulls and session starts, honours deletion requests with ``erase``,
and answers every probe with ``render_context`` — no LLM. The validators then read that
context (and, after a deletion, the store itself).

Example:
    >>> from mars_core.bench.fifa.world import WorldConfig, generate_world
    >>> w = generate_world(2, "crisis_management", WorldConfig(scale=0.3))
    >>> run = simulate(w, "lru", 2000)
    >>> len(run.verdicts) == len(w.probes), run.acted
    (True, False)
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from mars_core.audit import AuditOp
from mars_core.bench.fifa.scenarios import ARCHETYPES, EventKind, ProbeKind
from mars_core.bench.fifa.validators import Verdict, judge
from mars_core.bench.fifa.vocab import CLAUSES
from mars_core.bench.fifa.world import Event, Probe, World
from mars_core.clock import FakeClock
from mars_core.config import RetrievalConfig
from mars_core.embeddings import HashingEmbedder, Matrix
from mars_core.errors import MarsError, ValidationError
from mars_core.model import MemoryStatus
from mars_core.store import MemoryStore

__all__ = ["AgentStats", "CachedEmbedder", "RunResult", "RunSettings", "Volume", "simulate",
           "stored_volume"]

_START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
_MUTATIONS = frozenset({AuditOp.INSERT, AuditOp.UPDATE, AuditOp.EVICT, AuditOp.SUMMARISE,
                        AuditOp.ERASE, AuditOp.RESTORE, AuditOp.METADATA})
_NOT_POLICY = frozenset({"ttl", "user", "update"})
_UNBOUNDED = 2**31 - 1  # a budget no world reaches: nothing is ever evicted
SENSITIVITY: dict[EventKind, float] = {EventKind.SENSITIVE: 0.9, EventKind.TTL: 0.6,
                                       EventKind.SOCIAL: 0.3, EventKind.RELATION: 0.3}
"""Sensitivity labelled at the source, by event kind (others: 0.05). FiFA measures
retention, not detection (``mars bench leakage`` measures the detectors), so stores run
with ``sensitivity_scoring=False`` and get these labels; answers are still redacted."""


class CachedEmbedder:
    """:class:`~mars_core.embeddings.HashingEmbedder` with a bounded per-process memo.

    Every policy and budget replays the same world, so the same texts and questions are
    embedded again and again; the vectors are a pure function of the text, so caching them
    changes no result (same ``name`` and ``dim`` as the wrapped embedder).

    Example:
        >>> e = CachedEmbedder()
        >>> bool((e.embed(["a cat"]) == HashingEmbedder().embed(["a cat"])).all())
        True
    """

    def __init__(self, limit: int = 50_000) -> None:
        self._inner = HashingEmbedder()
        self.name, self.dim = self._inner.name, self._inner.dim
        self._memo: dict[str, Matrix] = {}
        self._limit = limit

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Embed ``texts`` (rows from the memo where seen before)."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if len(self._memo) + len(missing) > self._limit:
            self._memo.clear()
        if missing:
            for t, row in zip(missing, self._inner.embed(missing), strict=True):
                self._memo[t] = row
        if not texts:
            return self._inner.embed([])
        return np.stack([self._memo[t] for t in texts])


_EMBEDDER = CachedEmbedder()


@dataclass(frozen=True)
class RunSettings:
    """How agents answer (fixed for the whole grid; part of ``FIFA_VERSION``).

    Attributes:
        prompt_tokens: ``render_context`` budget of an answer.
        active_turns: recent turns of the session shown in an answer.
        search_archive: answers also search what a policy archived to make room (the
            store's default since the archive became a second retrieval tier). Off in FiFA:
            the paper's budget bounds what an agent has — an evicted memory is gone (§3,
            §6.7) — and with the archive searched no budget would bind what an agent answers
            from, so the benchmark would measure no forgetting at all.
        redact: answers pass the store's output check (``render_context(redact=True)``, its
            default: the surface pass and the semantic pass). False is a diagnostic of the
            reproduction pages (how much of a gap the check makes), never a grid setting.
    """

    prompt_tokens: int = 256
    active_turns: int = 4
    search_archive: bool = False
    redact: bool = True


@dataclass
class AgentStats:
    """Deterministic cost counters of one agent's store."""

    written: int = 0
    answer_tokens: int = 0
    answers: int = 0
    ops: Counter[str] = field(default_factory=Counter)
    policy_actions: int = 0
    stored_tokens_at_answers: int = 0
    heaviest: int = 0
    withheld: int = 0
    """Memories the output check's semantic pass withheld from answers (a diagnostic)."""


@dataclass(frozen=True)
class RunResult:
    """Verdicts and counters of one (world, policy, budget) run.

    ``acted`` is False when no forgetting policy ever evicted or summarised anything:
    the budget never bound, so any larger budget gives the same run.
    """

    verdicts: tuple[Verdict, ...]
    agents: tuple[AgentStats, ...]
    acted: bool


@dataclass(frozen=True)
class Volume:
    """What a world's cast agents store when nothing is ever evicted.

    Attributes:
        peaks: per cast agent, the most tokens its store held at once (TTL expiries and
            deletion requests applied, as in every run).
        heaviest: the heaviest single memory any cast agent wrote (a budget below it
            cannot hold that memory).
    """

    peaks: tuple[int, ...]
    heaviest: int

    @property
    def mean(self) -> float:
        """Mean peak over the cast: the stored tokens budgets are shares of."""
        return sum(self.peaks) / len(self.peaks)


def stored_volume(world: World) -> Volume:
    """Replay ``world``'s writes, TTL maintenance and deletions into unbounded stores (no
    probes: answering changes nothing a store holds) and measure their peaks.

    Example:
        >>> from mars_core.bench.fifa.world import WorldConfig, generate_world
        >>> v = stored_volume(generate_world(2, "crisis_management", WorldConfig(scale=0.3)))
        >>> len(v.peaks), 0 < v.heaviest <= min(v.peaks)
        (5, True)
    """
    clocks = [FakeClock(_START) for _ in world.cast]
    stores = [_open_store(world, i, "fifo", _UNBOUNDED, clocks[i], st=RunSettings())
              for i in range(len(world.cast))]
    stats = [AgentStats() for _ in stores]
    nodes: list[dict[str, list[str]]] = [{} for _ in stores]
    peaks = [0] * len(stores)
    try:
        for event in world.events:
            _advance(world, event, stores, clocks, nodes=nodes, stats=stats)
            for w in event.writers:
                peaks[w] = max(peaks[w], _held(stores[w]))
    finally:
        for s in stores:
            s.close()
    return Volume(tuple(peaks), max(a.heaviest for a in stats))


def _held(store: MemoryStore) -> int:
    """Tokens of the active memories of the store's default namespace (Σ w_i)."""
    ns = store.config.default_namespace
    return int(store.stats(ns)["namespaces"][ns]["tokens"])


def simulate(world: World, policy: str, budget: int,
             settings: RunSettings | None = None) -> RunResult:
    """Run ``world`` with every cast agent's store under ``policy`` and ``budget``.

    Raises:
        ValidationError: unknown policy or a non-positive budget.
    """
    if not isinstance(budget, int) or budget <= 0:
        raise ValidationError("budget must be a positive integer (tokens)")
    st = settings or RunSettings()
    clocks = [FakeClock(_START) for _ in world.cast]
    stores = [_open_store(world, i, policy, budget, clocks[i], st=st)
              for i in range(len(world.cast))]
    try:
        return _replay(world, stores, clocks, st)
    finally:
        for s in stores:
            s.close()


def _open_store(world: World, i: int, policy: str, budget: int, clock: FakeClock, *,
                st: RunSettings) -> MemoryStore:
    key = hashlib.blake2b(f"fifa-audit|{world.seed}|{world.scenario}|{i}".encode(),
                          digest_size=32).digest()
    try:
        return MemoryStore(budget=budget, policy=policy, clock=clock, audit_key=key,
                           embedder=_EMBEDDER, seed=world.seed * 101 + i, nlp="off",
                           sensitivity_scoring=False,
                           retrieval=RetrievalConfig(search_archive=st.search_archive))
    except MarsError as exc:
        raise ValidationError(f"cannot build a store with policy {policy!r}: {exc}") from exc


def _replay(world: World, stores: list[MemoryStore], clocks: list[FakeClock],
            st: RunSettings) -> RunResult:
    stats = [AgentStats() for _ in stores]
    nodes: list[dict[str, list[str]]] = [{} for _ in stores]  # fact/goal id -> node ids
    probes: dict[int, list[Probe]] = {}
    for p in world.probes:
        probes.setdefault(p.after, []).append(p)
    verdicts: list[Verdict] = []
    for event in world.events:
        _advance(world, event, stores, clocks, nodes=nodes, stats=stats)
        for probe in probes.get(event.index, []):
            verdicts.append(_answer(world, probe, stores[probe.agent], stats[probe.agent], st))
    for s, a in zip(stores, stats, strict=True):
        _count_ops(s, a)
    return RunResult(tuple(verdicts), tuple(stats), any(a.policy_actions for a in stats))


def _advance(world: World, event: Event, stores: list[MemoryStore],
             clocks: list[FakeClock], *, nodes: list[dict[str, list[str]]],
             stats: list[AgentStats]) -> None:
    """One event of the world: the clocks move to it, maintenance runs when it is due,
    and every agent that witnesses it writes."""
    for c in clocks:
        c.set(_START + timedelta(minutes=event.minute))
    if event.maintenance:
        for s in stores:
            s.maintain(ttl=True, graduated=False, dedup=False, reflect=False)
    _witness(world, event, stores, nodes, stats)


def _witness(world: World, e: Event, stores: list[MemoryStore],
             nodes: list[dict[str, list[str]]], stats: list[AgentStats]) -> None:
    """Every writer stores the event its own way (or erases, for a deletion request)."""
    for w in e.writers:
        if e.kind is EventKind.DELETION:
            _erase(stores[w], nodes[w].pop(e.forget or "", []))
            continue
        node = stores[w].add(_style(world, e, w), **_typed(world, e, w),
                             sensitivity=SENSITIVITY.get(e.kind, 0.05),
                             provenance={"source": "user", "turn": e.index,
                                         "conversation_id": f"{world.scenario}-{e.session}",
                                         "session_id": f"s{e.session}"})
        stats[w].written += 1
        stats[w].heaviest = max(stats[w].heaviest, node.weight)
        for key in (e.fact, e.goal if e.kind is EventKind.GOAL else None):
            if key is not None:
                nodes[w].setdefault(key, []).append(node.id)
        if e.kind is EventKind.PREREQ and ARCHETYPES[w].structured_tasks:
            _link_goal(stores[w], nodes[w].get(e.goal or "", []), node.id)


def _typed(world: World, e: Event, w: int) -> dict[str, Any]:
    """Memory type and payload an agent of this archetype files the event under."""
    structured = ARCHETYPES[w].structured_tasks
    expires = _START + timedelta(minutes=e.expires_minute) if e.expires_minute else None
    if e.kind is EventKind.GOAL:
        if not structured:
            return {"type": "episodic"}
        return {"type": "task", "payload": {"goal": e.text[:80], "priority": 0.7}}
    if e.kind in (EventKind.SOCIAL, EventKind.RELATION) and e.phrase is not None:
        return {"type": "social", "payload": {"entity": e.phrase.names[0]}}
    mtype = e.mtype if structured or e.kind is not EventKind.PREREQ else "episodic"
    return {"type": mtype, "expires_at": expires}


def _style(world: World, e: Event, w: int) -> str:
    """The memory text: a header (session, time, who was there) and archetype clauses."""
    arch = ARCHETYPES[w]
    who = ", ".join(world.cast[i] for i in e.writers if i != w) or "nobody else"
    clauses = CLAUSES[arch.name]
    extra = [clauses[(e.index + k) % len(clauses)] for k in range(arch.verbosity)]
    body = e.text.rstrip(".") + (", " + ", ".join(extra) if extra else "") + "."
    return f"[{world.scenario} session {e.session + 1}, minute {int(e.minute)}, with {who}] {body}"


def _link_goal(store: MemoryStore, goal_ids: list[str], prereq_id: str) -> None:
    """A structured agent records that its active goal requires this prerequisite."""
    for gid in goal_ids:
        if store.get(gid).status is MemoryStatus.ACTIVE:
            store.link(gid, "requires", prereq_id)


def _erase(store: MemoryStore, ids: list[str]) -> None:
    """Honour a deletion request: erase every memory holding the fact (and its summaries)."""
    for nid in ids:
        try:
            store.erase(node_id=nid)
        except MarsError:  # already removed by an earlier cascade: nothing left to erase
            continue


def _answer(world: World, probe: Probe, store: MemoryStore, a: AgentStats,
            st: RunSettings) -> Verdict:
    """The agent answers with its rendered context; the validators judge it."""
    context = store.render_context(probe.question, budget_tokens=st.prompt_tokens,
                                   active_turns=st.active_turns, redact=st.redact)
    tokens = store.token_counter.count(context) if context else 0
    a.answers += 1
    a.answer_tokens += tokens
    a.stored_tokens_at_answers += _held(store)
    texts: list[str] = []
    if probe.kind is ProbeKind.POST_DELETION:
        texts = [n.content for n in store.list(status=None)]
    return judge(probe, context, tokens, texts)


def _count_ops(store: MemoryStore, a: AgentStats) -> None:
    """Memory operations from the audit trail (deterministic; no wall time)."""
    for ev in store.audit.events():
        a.ops[ev.op.value] += 1
        if ev.op is AuditOp.ACCESS:
            a.withheld += int((ev.params or {}).get("withheld", 0))
        if ev.op in (AuditOp.EVICT, AuditOp.SUMMARISE) and (ev.policy or "") not in _NOT_POLICY:
            a.policy_actions += 1


def mutation_ops(a: AgentStats) -> int:
    """Audited mutations (insert, update, evict, summarise, erase, restore, metadata)."""
    return sum(n for op, n in a.ops.items() if AuditOp(op) in _MUTATIONS)
