"""``MemoryStore(summariser=...)`` writes every summary the store writes (issue 22).

Before issue 22 the reflection a budget triggers ran the policy's own extractive
summariser: the store's summariser reached ``maintain`` and erasure only. Each path is
exercised on a real in-RAM SQLite store with a recording fake.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from mars_core.clock import FakeClock
from mars_core.embeddings import HashingEmbedder
from mars_core.knowledge.summarise import ExtractiveSummariser, FakeSummariser
from mars_core.policies import make_policy
from mars_core.policies.reflection import ReflectionSummaryPolicy
from mars_core.store import MemoryStore

KEY = b"k" * 32
COFFEE = ["The office coffee machine is broken again",
          "Someone reported the coffee machine leaking on Monday",
          "The coffee machine in the kitchen needs descaling",
          "Facilities will repair the office coffee machine",
          "The coffee machine grinder jammed this morning"]
OTHER = ["Bo plays the cello on Sundays", "The quarterly report is due in March",
         "Ana's flight to Porto leaves at nine"]

# the policies whose eviction writes summaries when the budget binds; meta with a
# reflection arm only, so the arm that decides is the one that summarises
SUMMARISING = {"reflection": {}, "hybrid": {}, "meta": {"arms": ["reflection"]}}


def feed(store: MemoryStore, n: int = 30) -> None:
    """Redundant coffee-machine reports (a cluster to summarise) among unrelated memories."""
    rng = random.Random(7)
    for i in range(n):
        store.add(f"{rng.choice(COFFEE)} (report {i})")
        if i % 4 == 0:
            store.add(OTHER[(i // 4) % len(OTHER)])


def make(policy: str = "reflection", path: Path | None = None, **kw: Any) -> MemoryStore:
    args: dict[str, Any] = {"policy": policy, "policy_params": SUMMARISING.get(policy, {}),
                            "budget": 300, "clock": FakeClock(), "audit_key": KEY,
                            "nlp": "rules", "embedder": HashingEmbedder(), **kw}
    return MemoryStore.open(path, **args) if path is not None else MemoryStore(**args)


def summaries(store: MemoryStore) -> list[Any]:
    return [n for n in store.list() if n.provenance.source == "summary"]


def answers(fake: FakeSummariser) -> set[str]:
    """What ``fake`` answered (replayed on a fresh fake: the answers depend on the input)."""
    replay = FakeSummariser(fake.text)
    return {replay(texts, target_tokens=t) for texts, t in fake.calls}


def summarise_events(store: MemoryStore) -> list[Any]:
    return [e for e in store.audit.events() if e.op.value == "summarise"]


@pytest.mark.backend_neutral(False)
@pytest.mark.parametrize("policy", sorted(SUMMARISING))
def test_budget_triggered_reflection_uses_the_store_summariser(policy: str) -> None:
    fake = FakeSummariser()
    with make(policy, summariser=fake) as store:
        feed(store)
        made = summaries(store)
        assert made, f"{policy}: the budget must trigger a reflection summary"
        assert len(fake.calls) >= len(made)
        # every summary is the fake's output (its first sentence of the first member)
        outputs = answers(fake)
        assert {n.content for n in made} <= outputs
        assert all(members and all("coffee machine" in m for m in members)
                   for members, _ in fake.calls[: len(made)])
        events = summarise_events(store)
        params = [e.params["arm_params"] if policy == "meta" else e.params for e in events]
        assert events and {p["summariser"] for p in params} == {"fake"}


@pytest.mark.backend_neutral(False)
def test_without_a_summariser_the_policy_keeps_its_extractive_default() -> None:
    with make("reflection") as store:
        feed(store)
        assert summaries(store)
        assert {e.params["summariser"] for e in summarise_events(store)} == {
            ExtractiveSummariser.name}
        assert isinstance(store.summariser, ExtractiveSummariser)


@pytest.mark.backend_neutral(False)
def test_maintain_uses_the_store_summariser() -> None:
    fake = FakeSummariser()
    with make("lru", budget=100_000, summariser=fake, reflect_at=0.001) as store:
        feed(store, n=12)
        assert not fake.calls  # lru never summarises under budget pressure
        assert store.maintain(dedup=False)["default"]["summarised"] >= 1
        made = summaries(store)
        assert made and fake.calls and {n.content for n in made} <= answers(fake)


@pytest.mark.backend_neutral(False)
def test_erasure_regenerates_a_budget_summary_with_the_store_summariser() -> None:
    fake = FakeSummariser(lambda texts: " / ".join(t.split(" (")[0] for t in texts))
    with make("reflection", summariser=fake) as store:
        feed(store)
        summary = next(n for n in summaries(store) if len(n.provenance.derived_from) >= 3)
        before = len(fake.calls)
        receipt = store.erase(node_id=summary.provenance.derived_from[0])
        (old, new), = receipt.regenerated
        assert old == summary.id and len(fake.calls) == before + 1
        members, _ = fake.calls[-1]
        assert len(members) == len(summary.provenance.derived_from) - 1
        assert store.get(new).content == fake.text(members)  # type: ignore[operator]


@pytest.mark.backend_neutral(False)
def test_a_reopened_store_hands_its_summariser_to_the_rebuilt_policy(tmp_path: Path) -> None:
    with make("hybrid", tmp_path / "db"):
        pass
    fake = FakeSummariser()
    with make("hybrid", tmp_path / "db", summariser=fake) as store:
        assert store.policy_for().summariser is fake  # type: ignore[attr-defined]
        feed(store)
        assert summaries(store) and fake.calls


def test_a_policy_built_with_its_own_summariser_keeps_it() -> None:
    own, theirs = FakeSummariser("own"), FakeSummariser("store")
    policy = ReflectionSummaryPolicy(summariser=own)
    policy.use_summariser(theirs)
    assert policy.summariser is own
    assert not make_policy("lru").summarises and make_policy("hybrid").summarises
