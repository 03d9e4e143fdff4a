"""Reflection-Summary (seed 000 §3.3.2, §4.3, §5.3; DESIGN §6) and the summarisers."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from mars_core.budget import ApproxTokenCounter
from mars_core.clock import FakeClock
from mars_core.embeddings import HashingEmbedder
from mars_core.errors import ConfigError, PolicyError
from mars_core.knowledge.summarise import (
    CallableSummariser,
    ExtractiveSummariser,
    FakeSummariser,
    find_identifiers,
    key_terms,
    mask_identifiers,
)
from mars_core.model import (
    Edge,
    MemoryNode,
    MemoryStatus,
    MemoryType,
    Predicate,
    TaskPayload,
    TaskStatus,
    default_payload,
)
from mars_core.policies import MAX_DEPTH, Policy, SummariseStage, Summary, make_policy
from mars_core.policies.plan import PolicyView, Stage
from mars_core.policies.reflection import (
    ReflectionConfig,
    ReflectionSummaryPolicy,
    density_candidates,
    find_clusters,
    gate_reference,
    privacy_gate,
    propose_summaries,
    summary_sensitivity,
)
from mars_core.scoring.density import density_batch
from mars_core.store import MemoryStore
from mars_core.testing import StoreFactory
from mars_core.views.namespace import NamespaceState, NamespaceView, ViewIO

T0 = datetime(2026, 1, 1, tzinfo=UTC)

pytestmark = pytest.mark.backend_neutral
"""Only the tests marked ``backend_neutral(False)`` build stores: they run on each backend
of the matrix (``tests/conftest.py``), the others once."""

EMB = HashingEmbedder()
COUNT = ApproxTokenCounter().count
PHONE = "555-123-4567"
UNRELATED = [
    "Ana booked a flight to Lisbon for the conference in May.",
    "The quarterly report is due next Friday and needs the sales figures.",
    "My daughter started piano lessons on Tuesdays.",
    "We switched the CI pipeline from Jenkins to GitHub Actions.",
    "I prefer window seats on long flights.",
    "The dentist appointment moved to 3pm on Thursday.",
    "Bob recommended a Thai restaurant near the station.",
    "Remember to renew the car insurance before the end of the month.",
]


def coffee(rng: random.Random) -> str:
    """A near-verbatim repeat about one topic (hashing-embedder cosine ≥ 0.8)."""
    return ("The coffee machine on the third floor is leaking water again"
            f"{rng.choice(['', ' today', ' this morning', ' after lunch'])}"
            f"{rng.choice(['.', '!', ', ugh.'])}")


def node(i: int, text: str, *, step: int | None = None, sensitivity: float = 0.0,
         mtype: MemoryType = MemoryType.EPISODIC, depth: int = 0, pinned: bool = False,
         payload: Any = None) -> MemoryNode:
    return MemoryNode(id=f"n{i:03d}", type=mtype, content=text, namespace="ns",
                      created_at=T0, step=i if step is None else step, seq=i,
                      sensitivity=sensitivity, weight=max(1, COUNT(text)), depth=depth,
                      pinned=pinned, payload=payload or default_payload(mtype))


def make_view(nodes: Sequence[MemoryNode], edges: Sequence[Edge] = (), *,
              budget: int = 10_000, step: int | None = None) -> NamespaceView:
    state = NamespaceState.of("ns", nodes=nodes, edges=edges)
    vecs = {n.id: EMB.embed([n.content])[0] for n in nodes}

    def vectors(ids: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        return np.stack([vecs[i] for i in ids]) if ids else np.zeros((0, EMB.dim), np.float32)

    io = ViewIO(vectors, lambda texts: EMB.embed(list(texts)), lambda t: max(1, COUNT(t)))
    last = max((n.step for n in nodes), default=0)
    return state.view(budget, T0, random.Random(0), step=step or last, io=io)


def coffee_nodes(k: int, start: int = 0, **kw: Any) -> list[MemoryNode]:
    rng = random.Random(start)
    return [node(start + i, coffee(rng), **kw) for i in range(k)]


def propose(view: PolicyView, *, summariser: Any = None, **cfg: Any) -> list[Summary]:
    return list(propose_summaries(view, 10**6, frozenset(), config=ReflectionConfig(**cfg),
                                  summariser=summariser))


# --- the store, end to end ------------------------------------------------------------------


def feed(store: MemoryStore, n_dup: int = 30) -> None:
    rng = random.Random(7)
    for i in range(n_dup):
        store.add(coffee(rng))
        if i % 4 == 0:
            store.add(UNRELATED[(i // 4) % len(UNRELATED)])


@pytest.fixture
def reflection_store(make_store: StoreFactory) -> StoreFactory:
    """This module's stores: the tests' store factory with the module's defaults."""
    return make_store.with_defaults(policy="reflection", budget=300, audit_key=b"k" * 32,
                                    nlp="rules")


@pytest.mark.backend_neutral(False)
def test_reflection_consolidates_a_redundant_cluster_and_lowers_cost(
        reflection_store: StoreFactory) -> None:
    with reflection_store() as store:
        feed(store)
        summaries = [n for n in store.list() if n.type is MemoryType.SEMANTIC]
        assert summaries, "budget pressure on a redundant topic must produce a summary"
        summary = summaries[0]
        assert summary.depth == 1 and summary.provenance.source == "summary"
        members = [store.get(i) for i in summary.provenance.derived_from]
        assert len(members) >= 3
        assert all(m.status is MemoryStatus.ARCHIVED for m in members)
        assert all("coffee machine" in m.content for m in members)
        assert summary.weight < sum(m.weight for m in members)
        assert "coffee" in summary.content
        stats = store.stats()["namespaces"]["default"]
        assert stats["tokens"] <= stats["budget"]
        exp = store.explain(summary.id)
        assert {link.node_id for link in exp.provenance} == set(summary.provenance.derived_from)
        assert all(link.status == "archived" for link in exp.provenance)
        event = next(e for e in exp.events if e.op.value == "summarise")
        assert event.policy == "reflection"
        assert event.rationale.startswith(f"consolidated {len(members)} redundant episodes")
        assert "distortion" in event.rationale and "≤ τ_util 0.63" in event.rationale
        assert "coffee" not in event.rationale  # no memory text in a rationale
        assert event.features[summary.id]["cluster_size"] == len(members)
        assert "derives from" in exp.render()
        # the unrelated memories were never consolidated
        for text in UNRELATED[:3]:
            assert not any(text == m.content for m in members)


@pytest.mark.backend_neutral(False)
def test_reflection_is_deterministic(reflection_store: StoreFactory) -> None:
    def run() -> list[tuple[str, int, tuple[str, ...]]]:
        with reflection_store(seed=0) as store:  # same seed and inputs, same store
            feed(store)
            return [(n.content, n.depth, n.provenance.derived_from)
                    for n in store.list(status=None) if n.type is MemoryType.SEMANTIC]

    first = run()
    assert first and first == run()


@pytest.mark.backend_neutral(False)
def test_depth_stops_at_two_and_the_rest_is_evicted(reflection_store: StoreFactory) -> None:
    rng = random.Random(3)
    with reflection_store(budget=150) as store:
        for _ in range(200):
            store.add(coffee(rng))
        nodes = store.list(status=None)
        assert max(n.depth for n in nodes) == MAX_DEPTH
        assert any(n.depth == 2 for n in nodes)
        stats = store.stats()["namespaces"]["default"]
        assert stats["tokens"] <= stats["budget"]


@pytest.mark.backend_neutral(False)
def test_density_stage_restores_the_budget_when_nothing_clusters(
        reflection_store: StoreFactory) -> None:
    with reflection_store(budget=60) as store:
        for text in UNRELATED:
            store.add(text)
        assert not any(n.type is MemoryType.SEMANTIC for n in store.list(status=None))
        archived = store.list(status="archived")
        assert archived
        rationale = store.explain(archived[0].id).rationale
        assert rationale.startswith("evicted by density: low utility density")
        assert store.stats()["namespaces"]["default"]["tokens"] <= 60


def test_registry_params_and_bad_config() -> None:
    policy = make_policy("reflection", tau_util=0.5, max_summaries_per_trigger=1)
    assert isinstance(policy, ReflectionSummaryPolicy)
    assert policy.params()["tau_util"] == 0.5
    assert policy.params()["summariser"] == "extractive-centroid-v1"
    with pytest.raises(ConfigError):
        make_policy("reflection", tau_utility=0.5)
    with pytest.raises(ConfigError):
        ReflectionSummaryPolicy(min_cluster_size=5, max_cluster_size=4)
    cfg = ReflectionConfig(tau_priv=0.2)
    assert ReflectionSummaryPolicy(cfg, tau_util=0.3).config.tau_priv == 0.2
    for name in ReflectionConfig.model_fields:
        assert ReflectionConfig.model_fields[name].description


# --- clustering -------------------------------------------------------------------------------


def test_clusters_follow_temporal_linkage() -> None:
    dups = coffee_nodes(6)
    others = [node(6 + i, t) for i, t in enumerate(UNRELATED[:4])]
    late = coffee_nodes(4, start=100)  # same topic, 100 steps later: a separate cluster
    clusters = find_clusters(make_view(dups + others + late))
    assert [set(c.ids) for c in clusters] == [{n.id for n in dups}, {n.id for n in late}] or \
        [set(c.ids) for c in clusters] == [{n.id for n in late}, {n.id for n in dups}]
    assert all(c.redundancy >= 0.8 for c in clusters)
    merged = find_clusters(make_view(dups + others + late), config=ReflectionConfig(
        temporal_window=200))
    assert len(merged) == 1 and len(merged[0].ids) == 10


def test_cluster_density_is_the_mars_density_inside_the_cluster() -> None:
    goal = node(50, "Fix the coffee machine leak", mtype=MemoryType.TASK, step=3,
                payload=TaskPayload(goal="fix", status=TaskStatus.ACTIVE))
    nodes = coffee_nodes(5)
    view = make_view([*nodes, goal], step=9)
    [cluster] = find_clusters(view)
    x = view.vectors(list(cluster.ids))
    batch = density_batch([MemoryType.EPISODIC] * 5, [9 - n.step for n in nodes], [0] * 5,
                          [0.0] * 5, [n.weight for n in nodes], embeddings=x,
                          goal=view.goal_vector())
    assert cluster.density == pytest.approx(float(batch.density.mean()), rel=1e-6)
    assert batch.features[:, 2].min() > 0  # the goal similarity took part


def test_large_components_are_cut_and_ineligible_nodes_skipped() -> None:
    nodes = coffee_nodes(40)
    clusters = find_clusters(make_view(nodes), config=ReflectionConfig(max_cluster_size=16))
    assert sorted(len(c.ids) for c in clusters) == [13, 13, 14]
    pinned = [n.model_copy(update={"pinned": True}) if n.seq % 2 else n for n in nodes[:8]]
    deep = [node(50 + i, n.content, depth=2, mtype=MemoryType.SEMANTIC,
                 step=8 + i) for i, n in enumerate(nodes[:3])]
    found = find_clusters(make_view(pinned + deep))
    ids = {i for c in found for i in c.ids}
    assert ids == {n.id for n in pinned if not n.pinned}


def test_task_protected_memories_are_never_summarised() -> None:
    dups = coffee_nodes(5)
    goal = node(10, "Get the coffee machine repaired", mtype=MemoryType.TASK,
                payload=TaskPayload(goal="repair", status=TaskStatus.ACTIVE))
    req = Edge(source=goal.id, predicate=Predicate.REQUIRES, target=dups[0].id)
    out = propose(make_view([*dups, goal], [req]))
    assert out and all(dups[0].id not in s.member_ids and goal.id not in s.member_ids
                       for s in out)


# --- gates -----------------------------------------------------------------------------------


def test_distortion_gate_rejects_a_cluster_of_unrelated_texts() -> None:
    view = make_view([node(i, t) for i, t in enumerate(UNRELATED)])
    loose = {"link_similarity": -1.0}
    assert find_clusters(view, config=ReflectionConfig(**loose)), "linked on purpose"
    assert propose(view, **loose) == []
    fake = FakeSummariser(UNRELATED[0])
    assert propose(view, summariser=fake, **loose) == []
    assert fake.calls, "the summariser ran; the distortion gate refused its output"
    relaxed = propose(view, summariser=FakeSummariser(UNRELATED[0]), tau_util=2.0, **loose)
    assert relaxed and relaxed[0].distortion > ReflectionConfig().tau_util


def test_distortion_is_the_mean_embedding_distance() -> None:
    nodes = coffee_nodes(4)
    text = "The coffee machine on the third floor is leaking water again."
    [s] = propose(make_view(nodes), summariser=FakeSummariser(text))
    x = EMB.embed([n.content for n in nodes])
    expected = float(np.linalg.norm(x - EMB.embed([text])[0], axis=1).mean())
    assert s.distortion == pytest.approx(expected, abs=1e-5)
    assert s.features["distortion"] == s.distortion
    assert s.concept == ", ".join(key_terms([n.content for n in nodes]))


def _sensitive_cluster(with_phone: bool = True, level: float = 0.8) -> list[MemoryNode]:
    """Five coffee turns, one of them sensitive (``level``), the others at 0."""
    nodes = coffee_nodes(5)
    extra = f" Call facilities at {PHONE}." if with_phone else " Facilities know about it."
    nodes[2] = node(2, nodes[2].content + extra, sensitivity=level)
    return nodes


def _all_sensitive_cluster() -> list[MemoryNode]:
    """Three coffee turns that each give the phone number: sensitivities 0.8, 0.7, 0.9."""
    rng = random.Random(0)
    return [node(i, f"{coffee(rng)} Call facilities at {PHONE}.", sensitivity=s)
            for i, s in enumerate((0.8, 0.7, 0.9))]


BASE = "The coffee machine on the third floor is leaking water again."


def test_privacy_gate_is_the_least_sensitive_member_minus_tau() -> None:
    """§4.3 as written, s̄ ≤ min_i s_i − τ_priv: members 0.8, 0.7, 0.9 with a phone each;
    a summary that masks it keeps half of each (identifier discount 0.5), s̄ = 0.45 ≤
    0.70 − 0.05 — accepted; one that keeps the number has s̄ = 0.90 — refused."""
    view = make_view(_all_sensitive_cluster())
    assert propose(view, summariser=FakeSummariser(f"{BASE} Call facilities at {PHONE}.")) == []
    [ok] = propose(view, summariser=FakeSummariser(f"{BASE} Call facilities at [phone]."))
    assert ok.sensitivity == pytest.approx(0.45)
    assert ok.features["gate_reference"] == pytest.approx(0.7)
    assert ok.features["min_member_sensitivity"] == pytest.approx(0.7)
    assert "sensitivity 0.45 ≤ 0.70 (least sensitive member) − τ_priv 0.05" in ok.rationale


def test_privacy_gate_refuses_a_mixed_cluster_unless_the_summary_is_harmless() -> None:
    """One member at 0.8 (with a phone) and four ordinary turns: the least sensitive counts
    0, so the masked summary's 0.40 is refused under "min"; under "max" (the gate before
    issue 33) 0.40 ≤ 0.80 − 0.05 is accepted. With the sensitive member at 0.5, masking
    leaves 0.25, below the floor (0.3): nothing left to protect, accepted under "min"."""
    view = make_view(_sensitive_cluster())
    masked = FakeSummariser(f"{BASE} Call [phone].")
    assert propose(view, summariser=masked) == []
    assert propose(view) == []  # the extractive default masks too: still 0.40
    [old] = propose(view, summariser=masked, privacy_reference="max")
    assert old.sensitivity == pytest.approx(0.4) and old.features["identifiers_removed"] == 1.0
    assert "sensitivity 0.40 ≤ 0.80 (most sensitive member) − τ_priv 0.05" in old.rationale
    [floor] = propose(make_view(_sensitive_cluster(level=0.5)), summariser=masked)
    assert floor.sensitivity == pytest.approx(0.25)
    assert ("summary sensitivity 0.25 < gate floor 0.30 (the least sensitive member counts "
            "0.00)") in floor.rationale
    assert propose(make_view(_sensitive_cluster(level=0.5)), summariser=masked,
                   gate_floor=0.2) == []


def test_privacy_gate_credits_only_verifiable_removal() -> None:
    view = make_view(_sensitive_cluster(with_phone=False))
    assert propose(view, privacy_reference="max") == [], \
        "a sensitive member without identifiers keeps s̄ = max s"


def test_zero_sensitivity_clusters_pass_the_privacy_gate() -> None:
    [s] = propose(make_view(coffee_nodes(5)))
    assert s.sensitivity == 0.0 and "no sensitive member" in s.rationale
    assert privacy_gate(0.0, 0.0, 0.05)
    assert privacy_gate(0.0, 0.03, 0.05)  # nothing sensitive left in the summary
    assert not privacy_gate(0.01, 0.03, 0.05)
    assert privacy_gate(0.75, 0.8, 0.05) and not privacy_gate(0.76, 0.8, 0.05)
    assert privacy_gate(0.29, 0.0, 0.05, floor=0.3) and not privacy_gate(0.3, 0.0, 0.05, 0.3)
    assert gate_reference([0.8, 0.7, 0.9]) == 0.7
    assert gate_reference([0.8, 0.1], floor=0.3) == 0.0
    assert gate_reference([0.8, 0.1], floor=0.3, how="max") == 0.8
    assert gate_reference([0.2, 0.1], floor=0.3, how="max") == 0.0


def test_summary_sensitivity_rule() -> None:
    texts = [f"call {PHONE}", "mail ana@example.org", "plain"]
    assert summary_sensitivity(texts, [0.8, 0.6, 0.3], "call [phone], mail [email]") == (0.4, 2)
    assert summary_sensitivity(texts, [0.8, 0.6, 0.3], f"call {PHONE}") == (0.8, 1)
    assert summary_sensitivity(texts, [0.2, 0.2, 0.7], "nothing") == (0.7, 2)


def test_depth_limit_in_proposals_and_in_the_template() -> None:
    depth1 = [node(i, n.content, mtype=MemoryType.SEMANTIC, depth=1)
              for i, n in enumerate(coffee_nodes(4))]
    [s] = propose(make_view(depth1))
    assert s.features["depth"] == 2.0
    depth2 = [n.model_copy(update={"depth": 2}) for n in depth1]
    view = make_view(depth2, budget=10)
    assert propose(view) == []

    class Forced(Policy):
        name = "forced"

        def _stages(self) -> Sequence[Stage]:
            return (SummariseStage("forced", lambda v, need, taken: [
                Summary(tuple(n.id for n in depth2), "coffee", 0.1, 0.0)]),)

    plan = Forced().apply(view, 5)
    assert plan.summaries == [] and plan.evictions  # the template refused depth 3


def test_rate_limits_cap_summariser_calls() -> None:
    nodes = coffee_nodes(6) + coffee_nodes(6, start=40) + coffee_nodes(6, start=80)
    view = make_view(nodes)
    fake = FakeSummariser("The coffee machine on the third floor is leaking water again.")
    assert len(propose(view, summariser=fake)) == 2 and len(fake.calls) == 2
    fake.calls.clear()
    assert len(propose(view, summariser=fake, max_attempts_per_trigger=1)) == 1
    assert len(fake.calls) == 1
    fake.calls.clear()
    assert propose(view, summariser=fake, max_summaries_per_trigger=0) == []
    assert fake.calls == []
    bad = FakeSummariser("x " * 500)  # not cheaper: skipped, counts as an attempt
    assert propose(view, summariser=bad) == []
    # each cluster is resubmitted once at half the target (a retry is an attempt too)
    assert [t for _, t in bad.calls] == [25, 12, 25, 12]


@dataclass
class FailsFirst:
    """A summariser whose first answer fails (``first``: raise, "long", "unrelated" or
    "phone") and whose next ones are a good summary; it records the targets it was given."""

    first: str
    fail_again: bool = False
    targets: list[int] = field(default_factory=list)
    name: str = "fails-first"
    good: str = "The coffee machine on the third floor is leaking water again."
    phone: str = ("The coffee machine on the third floor is leaking water again. "
                  f"Call facilities at {PHONE}.")

    def __call__(self, texts: Sequence[str], *, target_tokens: int) -> str:
        self.targets.append(target_tokens)
        if len(self.targets) == 1 or self.fail_again:
            if self.first == "raise":
                raise PolicyError("LLM timed out")
            return {"long": "x " * 500, "unrelated": UNRELATED[0],
                    "phone": self.phone}[self.first]
        return self.good


@pytest.mark.parametrize(("first", "retry", "why"), [
    ("raise", 6, "the summariser failed (PolicyError)"),
    ("long", 6, "the summary was not shorter than its cluster"),
    ("unrelated", 24, "distortion 1."),
])
def test_a_failed_summary_is_resubmitted_with_a_more_conservative_target(
        first: str, retry: int, why: str) -> None:
    """§5.3: a cluster that fails is "resubmitted with a more conservative target length":
    shorter after an error or a summary too long, longer after the distortion gate (a
    summary that keeps more loses less); target 12 = 0.3 × 42 tokens, so 6 or 24."""
    fake = FailsFirst(first)
    [s] = propose(make_view(coffee_nodes(3)), summariser=fake)
    assert fake.targets == [12, retry]
    assert s.features["retry"] == 1.0 and s.features["first_target_tokens"] == 12.0
    assert s.features["target_tokens"] == float(retry)
    way = "shorter" if retry < 12 else "longer"
    assert (f"resubmitted at a more conservative target ({way}: {retry} tokens instead of "
            f"12) after the first summary failed: {why}") in s.rationale
    assert "coffee" not in s.rationale


def test_a_privacy_failure_is_retried_shorter_and_twice_failed_clusters_are_skipped() -> None:
    view = make_view(_all_sensitive_cluster())
    fake = FailsFirst("phone", good=f"{BASE} Call facilities at [phone].")
    [s] = propose(view, summariser=fake)
    assert fake.targets[1] == fake.targets[0] // 2
    assert "sensitivity 0.90 > 0.70 (min member) − τ_priv 0.05" in s.rationale
    assert s.sensitivity == pytest.approx(0.45)
    mixed = FailsFirst("phone", good=f"{BASE} Call [phone].", phone=f"{BASE} Call {PHONE}.")
    assert propose(make_view(_sensitive_cluster()), summariser=mixed) == []
    assert len(mixed.targets) == 2  # the retry masks the number, but 0.40 is not below 0
    assert [len(propose(make_view(_sensitive_cluster()), privacy_reference="max",
                        summariser=FailsFirst("phone", good=f"{BASE} Call [phone].",
                                              phone=f"{BASE} Call {PHONE}.")))] == [1]
    stubborn = FailsFirst("raise", fail_again=True)
    assert propose(make_view(coffee_nodes(3)), summariser=stubborn) == []
    assert stubborn.targets == [12, 6]  # once, not more
    once = FailsFirst("raise")
    assert propose(make_view(coffee_nodes(3)), summariser=once, conservative_retry=False) == []
    assert once.targets == [12]
    last = FailsFirst("raise")  # no attempt left for a retry
    assert propose(make_view(coffee_nodes(3)), summariser=last,
                   max_attempts_per_trigger=1) == []
    assert last.targets == [12]


@pytest.mark.backend_neutral(False)
def test_a_summary_accepted_on_retry_is_audited_with_both_targets() -> None:
    """The store's summariser (here through ``maintain``) gets the retry too; the summarise
    event keeps both targets and the first failure, never the text."""
    fake = FailsFirst("raise")
    with MemoryStore(budget=100_000, clock=FakeClock(), audit_key=b"k" * 32, nlp="rules",
                     summariser=fake, reflect_at=0.001) as store:
        feed(store, n_dup=6)
        assert store.maintain(dedup=False)["default"]["summarised"] >= 1
        event = next(e for e in store.audit.events() if e.op.value == "summarise")
        [features] = event.features.values()
        assert features["retry"] == 1.0 and features["first_target_tokens"] == float(
            fake.targets[0]) and features["target_tokens"] == float(fake.targets[1])
        assert fake.targets[1] == fake.targets[0] // 2
        assert ("resubmitted at a more conservative target (shorter" in event.rationale
                and "the summariser failed (PolicyError)" in event.rationale)
        assert "timed out" not in event.rationale and "coffee" not in event.rationale
        assert event.params["conservative_retry"] is True and event.params["retry_factor"] == 0.5


def test_a_failing_summariser_skips_the_cluster() -> None:
    def boom(prompt: str) -> str:
        raise RuntimeError("LLM down")

    view = make_view(coffee_nodes(5))
    assert propose(view, summariser=CallableSummariser(boom)) == []
    policy = ReflectionSummaryPolicy(summariser=CallableSummariser(boom))
    plan = policy.apply(make_view(coffee_nodes(5), budget=20), 30)
    assert plan.summaries == [] and plan.freed >= 30  # the density stage took over


def test_density_candidates_are_sorted_and_audited() -> None:
    nodes = [node(i, t, sensitivity=0.9 if i == 3 else 0.0) for i, t in enumerate(UNRELATED)]
    cands = list(density_candidates(make_view(nodes)))
    scores = [c.score for c in cands]
    assert scores == sorted(scores)  # type: ignore[type-var]
    assert set(cands[0].features) >= {"recency", "novelty", "density", "utility"}


# --- summarisers ------------------------------------------------------------------------------


def test_extractive_summariser_is_central_short_deduplicated_and_masked() -> None:
    summ = ExtractiveSummariser()
    texts = [f"The printer on floor 2 is jammed. Ticket {12345678}.",
             "The printer on floor 2 is jammed again.",
             "The printer on floor 2 is jammed. Lunch was great.",
             "Mail the vendor at vendor@example.com about the printer."]
    out = summ(texts, target_tokens=12)
    assert out == summ(texts, target_tokens=12)
    assert out.count("jammed") == 1
    assert "12345678" not in out and "vendor@example.com" not in out
    long = summ(texts, target_tokens=200)
    assert "[email]" in long and "[number]" in long
    assert COUNT(out) <= COUNT(long)
    assert summ([], target_tokens=5) == "" and summ(["   "], target_tokens=5) == ""
    assert ExtractiveSummariser(mask=False)([texts[3]], target_tokens=50) == texts[3]
    with pytest.raises(ValueError):
        ExtractiveSummariser(dedup_similarity=0.0)


def test_identifier_detection() -> None:
    ids = find_identifiers("Mail A.B@Ex.org, call +44 20 7946 0958 or (555) 123-4567; "
                           "card 4111 1111 1111 1111; order 99887766; on 2026-03-04; room 12")
    assert {(i.kind, i.value) for i in ids} == {
        ("email", "a.b@ex.org"), ("phone", "442079460958"), ("phone", "5551234567"),
        ("number", "4111111111111111"), ("number", "99887766")}
    assert mask_identifiers("on 2026-03-04 at 10:30 in room 12") == \
        "on 2026-03-04 at 10:30 in room 12"
    assert find_identifiers("555 123 4567") == find_identifiers("555-123-4567")


def test_callable_summariser_prompt_and_output() -> None:
    prompts: list[str] = []

    def llm(prompt: str) -> str:
        prompts.append(prompt)
        return f"  Ana's number is {PHONE}.  "

    s = CallableSummariser(llm)
    assert s(["first turn", "second\nturn"], target_tokens=20) == "Ana's number is [phone]."
    assert "Abstract identifiers" in prompts[0] and "task-relevant gist" in prompts[0]
    assert "1. first turn" in prompts[0] and "2. second turn" in prompts[0]
    assert "at most 20 tokens" in prompts[0]
    raw = CallableSummariser(llm, mask=False)
    assert PHONE in raw(["x"], target_tokens=5)
    bad: Callable[[str], Any] = lambda prompt: None  # noqa: E731
    with pytest.raises(PolicyError):
        CallableSummariser(bad)(["x"], target_tokens=5)


def test_fake_summariser_defaults_to_the_first_sentence() -> None:
    fake = FakeSummariser()
    assert fake([f"Call {PHONE}. Then more.", "b"], target_tokens=3) == f"Call {PHONE}."
    assert FakeSummariser(lambda texts: str(len(texts)))(["a", "b"], target_tokens=1) == "2"
    assert fake([], target_tokens=1) == ""
