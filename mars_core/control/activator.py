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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from mars_core.control.access import TurnClock, links, memory_retention, namespace_version
from mars_core.control.clusters import Cluster, relevance
from mars_core.control.config import ActivatorConfig
from mars_core.control.decayer import UNCLUSTERED, Uncertainty
from mars_core.control.memory import CONTROL_KEY, Buffer, BufferItem, Layer, layer_of
from mars_core.control.text import (
    content_words,
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
from mars_core.model import MemoryNode, MemoryType
from mars_core.reading.retrieval import Hit
from mars_core.scoring.retention import OblivionConfig
from mars_core.store import MemoryStore

__all__ = ["Activation", "Activator", "ClusterTarget", "Decomposer", "SubQuery", "aim_at"]

Decomposer = Callable[[str], Sequence[str]]
"""``decomposer(query)``: focused sub-queries (the query itself is always kept)."""


_CLIP = (0.05, 0.95)
"""Seed 002's Decayer keeps utility and uncertainty scores in [0.05, 0.95]: "exact 0.0 or
1.0 values are forbidden—they create multiplicative zero-products in downstream budget
allocation"."""

_LAYER_TYPES: dict[Layer, tuple[MemoryType, ...]] = {
    Layer.L2: (MemoryType.SEMANTIC, MemoryType.SOCIAL, MemoryType.TASK),
    Layer.L3: (MemoryType.EPISODIC,),
}


@dataclass(frozen=True, slots=True)
class ClusterTarget:
    """An L1 cluster the Decayer found uncertain, which the Activator aims sub-queries at.

    Attributes:
        topic: the cluster's topic.
        keywords: its summary keywords.
        uncertainty: ``u_t(c)``, the Decayer's uncertainty of the cluster this round.
        relevance: share of the query's content words its topic and keywords hold.

    Examples:
        >>> ClusterTarget("music", ("cello", "guitar"), 0.75, 0.5).priority
        0.375
    """

    topic: str
    keywords: tuple[str, ...]
    uncertainty: float
    relevance: float

    @property
    def priority(self) -> float:
        """``relevance × u_t(c)``, each factor clipped to [0.05, 0.95] (no zero products)."""
        lo, hi = _CLIP
        return round(min(hi, max(lo, self.relevance)) * min(hi, max(lo, self.uncertainty)), 9)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (graph state)."""
        return {"topic": self.topic, "keywords": list(self.keywords),
                "uncertainty": self.uncertainty, "relevance": self.relevance}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClusterTarget:
        """Read :meth:`to_dict`'s form back.

        Raises:
            ValidationError: a malformed target.
        """
        try:
            kw = data["keywords"]
            if not isinstance(kw, list | tuple):
                raise TypeError("keywords")
            return cls(str(data["topic"]), tuple(str(k) for k in kw),
                       float(data["uncertainty"]), float(data["relevance"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValidationError(f"a cluster target needs topic, keywords, uncertainty and "
                                  f"relevance ({exc})") from None


def aim_at(query: str, verdict: Uncertainty, clusters: Sequence[Cluster], limit: int
           ) -> tuple[ClusterTarget, ...]:
    """The clusters the Activator aims at: those ``verdict`` found uncertain that share a
    content word with ``query``, highest ``relevance × u_t(c)`` first, at most ``limit``.

    The unclustered group is not a cluster (it has no summary to aim with); a cluster
    sharing no word with the query is one the paper's Decayer would list to *avoid*.

    Examples:
        >>> from mars_core.control.decayer import ClusterUncertainty
        >>> music = Cluster("2", "music", ("cello", "guitar"), (), 0.5, 0, 0)
        >>> home = Cluster("1", "personal details", ("live", "home"), (), 0.5, 0, 0)
        >>> v = Uncertainty(True, 0.0, 0.5, None, (), 1, "", (
        ...     ClusterUncertainty("personal details", ("a",), -0.7, 0.5, None, (), 0.75, True),
        ...     ClusterUncertainty("music", ("b",), -0.1, 0.5, None, (), 0.75, True)))
        >>> [(t.topic, t.priority) for t in aim_at("Ana cello", v, [home, music], 2)]
        [('music', 0.375)]
    """
    known = {c.topic: c for c in clusters}
    found = []
    for c in verdict.clusters:
        cluster = known.get(c.topic)
        if not c.uncertain or c.topic == UNCLUSTERED or cluster is None:
            continue
        rel = round(relevance(query, cluster), 6)
        if rel > 0:
            found.append(ClusterTarget(c.topic, cluster.keywords, c.uncertainty, rel))
    found.sort(key=lambda t: (-t.priority, t.topic))
    return tuple(found[:limit])


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
        layer: when set, the node searches only memories of this layer (L2 facts or L3
            episodes: seed 002's nodes specify "a memory type (L2 or L3)").
        cluster: the uncertain cluster's topic the node is aimed at, if any.
        weight: its list's weight in the fusion (0: run and shown, not fused).
    """

    id: int
    text: str
    parents: tuple[int, ...] = ()
    hits: tuple[str, ...] = ()
    speaker: str | None = None
    layer: Layer | None = None
    cluster: str | None = None
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class Activation:
    """The outcome of one Activator run.

    Attributes:
        buffer: the curated buffer.
        dag: the sub-queries run, in topological order.
        added: ids new to the buffer.
        evicted: ids that left it.
        targets: the uncertain clusters its sub-queries were aimed at.
    """

    buffer: Buffer
    dag: tuple[SubQuery, ...]
    added: tuple[str, ...]
    evicted: tuple[str, ...]
    targets: tuple[ClusterTarget, ...] = ()


@dataclass(slots=True)
class _Run:
    """The DAG being built: its nodes, their weighted candidate lists, the memories seen."""

    dag: list[SubQuery] = field(default_factory=list)
    lists: list[tuple[float, list[str]]] = field(default_factory=list)
    nodes: dict[str, MemoryNode] = field(default_factory=dict)

    def add(self, node: SubQuery, weight: float) -> SubQuery:
        """Append ``node`` and its hits as a fusion list of ``weight``."""
        node = replace(node, weight=round(weight, 9))
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

    def activate(self, query: str, buffer: Buffer, max_items: int, max_tokens: int,
                 targets: Sequence[ClusterTarget] = ()) -> Activation:
        """Run the DAG and curate the buffer under ``max_items`` and ``max_tokens``.

        Args:
            query: the user's message.
            buffer: the buffer ``B_t``.
            max_items: item cap.
            max_tokens: token cap.
            targets: clusters the Decayer found uncertain (:func:`aim_at`); each gets
                sub-queries aimed at it (:meth:`aimed`), at most ``target_clusters``.
        """
        dag, lists, nodes = self._run_dag(query, targets[: self.config.target_clusters])
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
                          tuple(i for i in buffer.ids if i not in now),
                          tuple(targets[: self.config.target_clusters]))

    def aimed(self, query: str, target: ClusterTarget) -> list[str]:
        """Sub-query texts aimed at an uncertain cluster (each run once per layer).

        Seed 002 asks its LLM for "at least 2 semantic and 2 episodic sub-queries per
        uncertain cluster", phrased differently. The rule-based phrasings are the query
        in the cluster's context (``"<query> <topic>"``) and the query joined to the
        cluster's ``target_terms`` keywords it lacks that the namespace holds, rarest
        first (``"<query> <keywords>"``); each runs over L2 facts and over L3 episodes.
        """
        own = content_words(query)
        df, _ = self._frequencies()
        forms: dict[frozenset[str], str] = {}  # one surface form per word ("love", not "lov")
        for k in target.keywords:
            w = frozenset(content_words(k))
            if w and not w & own and all(df.get(x, 0) for x in w):
                forms.setdefault(w, k)
        pool = sorted(forms.values(), key=lambda k: (min(df[x] for x in content_words(k)), k))
        texts = [f"{query} {target.topic}"]
        if self.config.target_terms and pool:
            texts.append(f"{query} {' '.join(pool[: self.config.target_terms])}")
        return list(dict.fromkeys(texts))

    def _run_dag(self, query: str, targets: Sequence[ClusterTarget] = ()
                 ) -> tuple[list[SubQuery], list[tuple[float, list[str]]],
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
        for target in targets:
            weight = self.config.target_weight * target.priority
            for text in self.aimed(query, target):
                for layer in (Layer.L2, Layer.L3):
                    found = self._search(text, run.nodes, types=_LAYER_TYPES[layer])
                    run.add(SubQuery(len(run.dag), text, (0,), tuple(self._head(found, run.nodes)),
                                     layer=layer, cluster=target.topic), weight)
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

    def _search(self, text: str, nodes: dict[str, MemoryNode], deep: bool = False,
                types: Sequence[MemoryType] | None = None) -> list[str]:
        """Ranked ids of ``text``'s candidates; ``deep``: ``scope_depth`` times as many
        tokens; ``types``: only memories of these types."""
        budget = self.config.per_query_tokens * (self.config.scope_depth if deep else 1)
        hits: list[Hit] = self.store.retrieve(  # no cut-off: fusion ranks the candidates
            text, budget_tokens=budget, namespace=self.namespace, types=types,
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
        """Document frequencies of the namespace's L2/L3 memories (an L1 cluster's
        summary is not evidence), recomputed when it changed."""
        version = namespace_version(self.store, self.namespace)
        if self._df is None or self._df[0] != version:
            df, docs = document_frequencies(n.content for n in self.store.list(self.namespace)
                                            if n.metadata.get(CONTROL_KEY) != "l1")
            self._df = (version, df, docs)
        return self._df[1], self._df[2]

    def _linked(self, ids: Sequence[str], nodes: dict[str, MemoryNode]) -> list[str]:
        """The linked memories of ``ids``, read through the store's output check as
        ``retrieve``'s hits are (a withheld one is left out)."""
        found = [n for neighbours in links(self.store, self.namespace, list(ids)).values()
                 for n in neighbours]
        fresh = [self.store.get(n, namespace=self.namespace)
                 for n in dict.fromkeys(found) if n not in nodes]
        for shown in self.store.check_output(fresh, namespace=self.namespace):
            if shown.node is not None:
                nodes[shown.node.id] = shown.node
        return [n for n in dict.fromkeys(found) if n in nodes]

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
