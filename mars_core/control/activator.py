"""The Activator (seed 002 §2.2): sub-query DAG retrieval into the bounded buffer.

The query is decomposed into a DAG of focused sub-queries:

1. **roots** — the query itself, then its parts (split on conjunctions, each keeping the
   query's entities; :func:`mars_core.control.text.decompose`), or whatever an optional
   ``decomposer(query) -> sub-queries`` returns (e.g. an LLM through
   :func:`langchain_mars.models.decomposer_from_chat_model`);
2. **speaker scope** — when a root names exactly one of the namespace's speakers (memories
   opening with ``"Name:"`` or observed with ``speaker=``;
   :func:`~mars_core.control.text.subject_of`), a child keeps only that speaker's own
   statements (and memories with no known speaker; a derived fact has its source turn's
   speaker) among the root's deeper candidates, and a grandchild asks the question in the
   speaker's own voice ("What activities does Ana partake in?" → "What activities do I
   partake in?"), restricted too: what a person did is in what they said, in the first
   person. The scoped child then stands for its root in the fusion (``unscoped_weight``,
   0 by default);
3. **second hop** — children of the main query: the entities and salient words of its
   best results that the query does not mention, each joined to the query (a refinement
   edge; e.g. "what did Ana's sister study?" → "… Marta" once a first-hop hit names her);
   not run under a speaker scope by default (``hop_when_scoped``).

Every sub-query searches the whole namespace (not filtered by cluster, §2.2). The main
query (its scoped child when it has one) also follows L2↔L3 links
(:func:`mars_core.control.access.links`). Candidate lists — each sub-query's, the linked
neighbours', and the cached buffer ranked by similarity to the new query — are fused by
weighted reciprocal rank (a list of weight 0 is not fused), multiplied by
``floor + (1 - floor)·R`` (memory retention), and packed greedily under the buffer's item
and token caps. Every read is ``read_only``: retrieval is not use; only credited use
reinforces (the Recognizer and the Memory Manager).

On LoCoMo multi-hop questions the speaker scope is what raises evidence recall over a
single query (``mars bench activator``; the figures and what did not help are in
docs/concepts/control.md).

Examples:
    >>> from mars_core import MemoryStore, FakeClock
    >>> from mars_core.control.memory import Buffer
    >>> with MemoryStore(clock=FakeClock()) as store:
    ...     _ = store.add("Ana's sister is called Marta", type="social")
    ...     _ = store.add("Marta studied marine biology in Faro", type="semantic")
    ...     _ = store.add("Bo plays the cello", type="semantic")
    ...     act = Activator(store, "default").activate("What did Ana's sister study?",
    ...                                                Buffer.empty(), 10, 64)
    ...     [s.text for s in act.dag][:2]
    ["What did Ana's sister study?", "What did Ana's sister study? Marta"]
    >>> [i.text for i in act.buffer.items][:2]
    ["Ana's sister is called Marta", 'Marta studied marine biology in Faro']
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from mars_core.control.access import TurnClock, links, memory_retention, namespace_version
from mars_core.control.config import ActivatorConfig
from mars_core.control.memory import CONTROL_KEY, Buffer, BufferItem, Layer, layer_of
from mars_core.control.text import (
    cosines,
    decompose,
    document_frequencies,
    entities,
    in_own_voice,
    salient_terms,
    speaker_of,
    subject_of,
)
from mars_core.embeddings import embed_one
from mars_core.errors import NotFoundError, ValidationError
from mars_core.model import MemoryNode
from mars_core.retrieval import Hit
from mars_core.scoring.retention import OblivionConfig
from mars_core.store import MemoryStore

__all__ = ["Activation", "Activator", "Decomposer", "SubQuery"]

Decomposer = Callable[[str], Sequence[str]]
"""``decomposer(query)``: focused sub-queries (the query itself is always kept)."""


@dataclass(frozen=True, slots=True)
class SubQuery:
    """A node of the sub-query DAG.

    Attributes:
        id: position in the DAG (topological order).
        text: the sub-query.
        parents: ids it refines (empty for roots).
        hits: ids it retrieved, best first.
        speaker: when set, the node keeps only this speaker's own statements (and
            memories with no known speaker) of its parent's results.
    """

    id: int
    text: str
    parents: tuple[int, ...] = ()
    hits: tuple[str, ...] = ()
    speaker: str | None = None


@dataclass(frozen=True, slots=True)
class Activation:
    """The outcome of one Activator run.

    Attributes:
        buffer: the curated buffer.
        dag: the sub-queries run, in topological order.
        added: ids new to the buffer.
        evicted: ids that left it.
    """

    buffer: Buffer
    dag: tuple[SubQuery, ...]
    added: tuple[str, ...]
    evicted: tuple[str, ...]


@dataclass(slots=True)
class _Run:
    """The DAG being built: its nodes, their weighted candidate lists, the memories seen."""

    dag: list[SubQuery] = field(default_factory=list)
    lists: list[tuple[float, list[str]]] = field(default_factory=list)
    nodes: dict[str, MemoryNode] = field(default_factory=dict)

    def add(self, node: SubQuery, weight: float) -> SubQuery:
        """Append ``node`` and its hits as a fusion list of ``weight``."""
        self.dag.append(node)
        self.lists.append((weight, list(node.hits)))
        return node


class Activator:
    """Sub-query DAG retrieval over a store namespace.

    Args:
        store: the memory store.
        namespace: where to search.
        config: decomposition and fusion parameters.
        decomposer: optional sub-query generator (default: deterministic).
        retention: Oblivion constants for memory retention.
    """

    def __init__(self, store: MemoryStore, namespace: str, config: ActivatorConfig | None = None,
                 decomposer: Decomposer | None = None,
                 retention: OblivionConfig | None = None) -> None:
        self.store, self.namespace = store, namespace
        self.config = config or ActivatorConfig()
        self.decomposer = decomposer
        self.retention = retention or OblivionConfig()
        # derived from the namespace, cached under its version (so exactly what a fresh
        # Activator computes: one rebuilt after its owner was evicted behaves the same)
        self._df: tuple[tuple[int, int], dict[str, int], int] | None = None
        self._speakers: tuple[tuple[int, int], frozenset[str]] | None = None

    def plan(self, query: str) -> list[str]:
        """The DAG roots: the query first, then its sub-queries (deduplicated)."""
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("a query must be a non-empty string")
        subs = (list(self.decomposer(query)) if self.decomposer is not None
                else decompose(query, self.config.split_conjunctions))
        roots = [query, *(s.strip() for s in subs if isinstance(s, str) and s.strip())]
        return list(dict.fromkeys(roots))

    def activate(self, query: str, buffer: Buffer, max_items: int, max_tokens: int) -> Activation:
        """Run the DAG and curate the buffer under ``max_items`` and ``max_tokens``."""
        dag, lists, nodes = self._run_dag(query)
        main = _main(dag)
        if self.config.follow_links and main.hits:
            lists.append((self.config.sub_weight, self._linked(main.hits, nodes)))
        if buffer.items:
            lists.append((self.config.cache_weight, self._cached(query, buffer, nodes)))
        ranked = self._fuse(lists, nodes)
        new = buffer.merge((BufferItem(n.id, n.content, layer_of(n), n.weight, s, r, via)
                            for n, s, r, via in ranked), max_items, max_tokens)
        old, now = set(buffer.ids), set(new.ids)
        return Activation(new, tuple(dag), tuple(i for i in new.ids if i not in old),
                          tuple(i for i in buffer.ids if i not in now))

    def _run_dag(self, query: str) -> tuple[list[SubQuery], list[tuple[float, list[str]]],
                                            dict[str, MemoryNode]]:
        run = _Run()
        speakers = self._namespace_speakers() if self.config.speaker_scope else frozenset()
        for text in self.plan(query):
            self._root(run, text, speakers)
        parent = _main(run.dag)
        if self.config.second_hop and (parent.speaker is None or self.config.hop_when_scoped):
            seen = set(parent.hits[: self.config.hop_sources]) if self.config.hop_novel else set()
            for text in self._second_hop(query, parent.hits, run.nodes):
                run.add(self._node(run, text, (parent.id,), parent.speaker, seen),
                        self.config.sub_weight)
        return run.dag, run.lists, run.nodes

    def _root(self, run: _Run, text: str, speakers: frozenset[str]) -> None:
        """A root node; when it names one speaker, its scoped child and own-voice grandchild.

        The scoped child keeps the subject's own statements of the root's (deeper)
        candidates; the grandchild asks the question in the subject's voice
        (:func:`~mars_core.control.text.in_own_voice`), also restricted to them.
        """
        weight = 1.0 if not run.dag else self.config.sub_weight
        subject = subject_of(text, speakers)
        found = self._search(text, run.nodes, deep=subject is not None)
        root = run.add(SubQuery(len(run.dag), text, () if not run.dag else (0,),
                                tuple(self._head(found, run.nodes))),
                       weight if subject is None else weight * self.config.unscoped_weight)
        if subject is None:
            return
        scoped = run.add(SubQuery(len(run.dag), text, (root.id,),
                                  tuple(self._own(found, subject, run.nodes)), subject), weight)
        voice = in_own_voice(text, subject)
        if self.config.voice_weight > 0 and voice != text:
            run.add(self._node(run, voice, (scoped.id,), subject),
                    weight * self.config.voice_weight)

    def _node(self, run: _Run, text: str, parents: tuple[int, ...], subject: str | None,
              skip: Iterable[str] = ()) -> SubQuery:
        """A node searching ``text``; with a subject, only that speaker's statements."""
        left = set(skip)
        found = [i for i in self._search(text, run.nodes, deep=subject is not None)
                 if i not in left]
        return SubQuery(len(run.dag), text, parents,
                        tuple(self._own(found, subject, run.nodes)), subject)

    def _own(self, found: Sequence[str], subject: str | None,
             nodes: dict[str, MemoryNode]) -> list[str]:
        """``subject``'s statements (and speakerless memories) of ``found``, budgeted."""
        return self._head([i for i in found if self._speaks(nodes[i], subject, nodes)], nodes)

    def _head(self, ids: Sequence[str], nodes: dict[str, MemoryNode]) -> list[str]:
        """The ids that fill ``per_query_tokens`` in order (as the store packs a budget)."""
        out, used = [], 0
        for i in ids:
            if used + nodes[i].weight <= self.config.per_query_tokens:
                out.append(i)
                used += nodes[i].weight
        return out

    def _speaks(self, node: MemoryNode, subject: str | None,
                nodes: dict[str, MemoryNode]) -> bool:
        """Whether ``node`` is ``subject``'s own statement or has no known speaker."""
        if subject is None:
            return True
        who = _own_speaker(node)
        for src in node.provenance.derived_from if who is None else ():
            parent = nodes.get(src) or self._source(src)
            who = _own_speaker(parent) if parent is not None else None
            if who is not None:
                break
        return who is None or who == subject

    def _source(self, node_id: str) -> MemoryNode | None:
        try:
            return self.store.get(node_id, namespace=self.namespace)
        except NotFoundError:
            return None

    def _namespace_speakers(self) -> frozenset[str]:
        """Speakers of the namespace's memories, recomputed when it changed."""
        version = namespace_version(self.store, self.namespace)
        if self._speakers is None or self._speakers[0] != version:
            found = (_own_speaker(n) for n in self.store.list(self.namespace))
            self._speakers = (version, frozenset(w for w in found if w is not None))
        return self._speakers[1]

    def _search(self, text: str, nodes: dict[str, MemoryNode], deep: bool = False
                ) -> list[str]:
        """Ranked ids of ``text``'s candidates; ``deep``: ``scope_depth`` times as many tokens."""
        budget = self.config.per_query_tokens * (self.config.scope_depth if deep else 1)
        hits: list[Hit] = self.store.retrieve(  # no cut-off: fusion ranks the candidates
            text, budget_tokens=budget, namespace=self.namespace,
            read_only=True, relative_cutoff=0.0)
        out = []
        for h in hits:
            if h.node.metadata.get(CONTROL_KEY) != "l1":
                nodes[h.id] = h.node
                out.append(h.id)
        return out

    def _second_hop(self, query: str, first: Sequence[str],
                    nodes: dict[str, MemoryNode]) -> list[str]:
        top = [nodes[i].content for i in first[: self.config.hop_sources]]
        if not top:
            return []
        names = entities(query)
        df, docs = self._frequencies()
        terms = salient_terms(top, [query, *names], self.config.hop_terms, df, docs)
        if self.config.hop_focus:
            return [" ".join([*names, t]) for t in terms]
        return [f"{query} {t}" for t in terms]

    def _frequencies(self) -> tuple[dict[str, int], int]:
        """Document frequencies of the namespace, recomputed when it changed."""
        version = namespace_version(self.store, self.namespace)
        if self._df is None or self._df[0] != version:
            df, docs = document_frequencies(n.content for n in self.store.list(self.namespace))
            self._df = (version, df, docs)
        return self._df[1], self._df[2]

    def _linked(self, ids: Sequence[str], nodes: dict[str, MemoryNode]) -> list[str]:
        out: list[str] = []
        for neighbours in links(self.store, self.namespace, list(ids)).values():
            for n in neighbours:
                if n not in nodes:
                    nodes[n] = self.store.get(n, namespace=self.namespace)
                out.append(n)
        return list(dict.fromkeys(out))

    def _cached(self, query: str, buffer: Buffer, nodes: dict[str, MemoryNode]) -> list[str]:
        live = []
        for item in buffer.items:
            node = nodes.get(item.id) or self.store.get(item.id, namespace=self.namespace)
            if node.is_active:
                nodes[item.id] = node
                live.append(item)
        if not live:
            return []
        emb = self.store.embedder
        sims = cosines(embed_one(emb, query),
                       np.asarray(emb.embed([i.text for i in live]), dtype=np.float32))
        order = sorted(range(len(live)), key=lambda j: (-sims[j], j))
        return [live[j].id for j in order]

    def _fuse(self, lists: Sequence[tuple[float, Sequence[str]]], nodes: dict[str, MemoryNode]
              ) -> list[tuple[MemoryNode, float, float, str]]:
        score: dict[str, float] = defaultdict(float)
        via: dict[str, str] = {}
        for li, (weight, ids) in enumerate(lists):
            if weight <= 0:  # a list of weight 0 is run (and shown in the DAG), not fused
                continue
            for rank, i in enumerate(ids):
                s = weight / (self.config.rrf_k + rank + 1)
                score[i] = score[i] + s if self.config.fusion == "sum" else max(score[i], s)
                via.setdefault(i, f"list{li}")
        clock = TurnClock(self.store, self.namespace) if self.config.retention_floor < 1 else None
        floor = self.config.retention_floor
        out = []
        for i, s in score.items():
            node = nodes[i]
            if layer_of(node) is Layer.L1:
                continue
            r = memory_retention(node, clock, self.retention) if clock is not None else 1.0
            out.append((node, round(s * (floor + (1 - floor) * r), 9), r, via[i]))
        out.sort(key=lambda t: (-t[1], t[0].seq))
        return self._diversify(out) if self.config.diversity > 0 else out

    def _diversify(self, ranked: list[tuple[MemoryNode, float, float, str]]
                   ) -> list[tuple[MemoryNode, float, float, str]]:
        """Greedy re-ranking that demotes neighbours (in Δn) of memories already chosen."""
        left = list(ranked)
        chosen: list[tuple[MemoryNode, float, float, str]] = []
        steps: list[int] = []
        keep, near = 1.0 - self.config.diversity, self.config.adjacency
        while left:
            def eff(t: tuple[MemoryNode, float, float, str]) -> float:
                close = any(abs(t[0].step - s) <= near for s in steps)
                return t[1] * (keep if close else 1.0)
            best = max(range(len(left)), key=lambda j: (eff(left[j]), -j))
            item = left.pop(best)
            chosen.append(item)
            steps.append(item[0].step)
        return chosen


def _main(dag: Sequence[SubQuery]) -> SubQuery:
    """The main query's node: its speaker-restricted child when it has one."""
    child = dag[1] if len(dag) > 1 else None
    return child if child is not None and child.speaker is not None and child.parents == (0,) \
        else dag[0]


def _own_speaker(node: MemoryNode) -> str | None:
    """Who said a memory: its episode's first participant, else its ``"Name:"`` prefix."""
    parts = getattr(node.payload, "participants", ())
    return str(parts[0]) if parts else speaker_of(node.content)
