"""The evidence learner: features, training, frozen model file, reranker, learned policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mars_core import FakeClock
from mars_core.embeddings import HashingEmbedder
from mars_core.errors import ConfigError, ValidationError
from mars_core.knowledge.learn import (
    RETENTION_FEATURES,
    RETRIEVAL_FEATURES,
    TEXT_FEATURES,
    EvidenceModel,
    FeatureLog,
    LearnConfig,
    Row,
    asks_question,
    rerank,
    retention_features,
    train,
)
from mars_core.policies.learned import LearnedPolicy
from mars_core.store import MemoryStore

FACTS = [f"Ana: I adopted a dog named Rex in {2000 + i} and moved to Lisbon" for i in range(20)]
CHAT = ["Bo: haha ok", "Ana: thanks!", "Bo: cool", "Ana: lol yes", "Bo: wow"] * 4


def _retention_log() -> FeatureLog:
    log = FeatureLog()
    for text in FACTS:
        log.add("retention", retention_features(text), 1)
    for text in CHAT:
        log.add("retention", retention_features(text), 0)
    return log


def test_training_is_deterministic_and_separates_the_classes(tmp_path: Path) -> None:
    log = _retention_log()
    a = train(log.rows("retention"), kind="retention")
    b = train(log.rows("retention"), kind="retention")
    assert np.array_equal(a.w1, b.w1)
    assert a.predict_one(retention_features(FACTS[0])) > 0.5 > \
        a.predict_one(retention_features(CHAT[0]))
    path = tmp_path / "m.json"
    a.save(path)
    again = EvidenceModel.load(path, kind="retention")
    x = a.matrix([retention_features(t) for t in FACTS + CHAT])
    assert np.allclose(a.predict(x), again.predict(x))
    assert "Rex" not in path.read_text()  # weights only, never text


def test_feature_log_round_trip_and_bad_rows(tmp_path: Path) -> None:
    log = _retention_log()
    path = tmp_path / "log.jsonl"
    log.save(path)
    assert len(FeatureLog.load(path).rows("retention")) == len(FACTS) + len(CHAT)
    with pytest.raises(ValidationError, match="lacks features"):
        log.add("retention", {"log_words": 1.0}, 1)
    with pytest.raises(ValidationError, match="0 or 1"):
        log.add("retention", retention_features("x"), 2)
    with pytest.raises(ValidationError, match="unknown kind"):
        log.add("other", {}, 1)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="both labels"):
        train([r for r in log.rows("retention") if r.label == 1], kind="retention")
    (tmp_path / "bad.jsonl").write_text("{nope\n")
    with pytest.raises(ValidationError, match="cannot read"):
        FeatureLog.load(tmp_path / "bad.jsonl")


def test_model_file_of_the_wrong_kind_or_shape_is_refused(tmp_path: Path) -> None:
    model = train(_retention_log().rows("retention"), kind="retention")
    path = tmp_path / "m.json"
    model.save(path)
    with pytest.raises(ValidationError, match="not a retrieval model"):
        EvidenceModel.load(path, kind="retrieval")
    path.write_text(path.read_text().replace('"log_words", ', ""))
    with pytest.raises(ValidationError):
        EvidenceModel.load(path)
    with pytest.raises(ValidationError, match="cannot read"):
        EvidenceModel.load(tmp_path / "absent.json")
    with pytest.raises(ValidationError, match="retrieval model"):
        rerank(model, "q", [])


def _old_file(path: Path, kind: str, names: tuple[str, ...]) -> Path:
    """A model file as the previous version wrote it (format /1, no odds scale)."""
    d = len(names)
    path.write_text(json.dumps({"format": "mars-evidence-learner/1", "kind": kind,
                                "names": list(names), "b2": 0.0, "mean": [0.0] * d,
                                "std": [1.0] * d, "w1": [[0.0] * 4] * d, "b1": [0.0] * 4,
                                "w2": [0.0] * 4}))
    return path


def test_old_model_files_load_or_are_refused_by_name(tmp_path: Path) -> None:
    # a retention model of the previous feature set (text features only) is refused,
    # naming what is missing, instead of being silently misread
    old = _old_file(tmp_path / "old.json", "retention", TEXT_FEATURES)
    with pytest.raises(ValidationError, match=r"missing .*after_question.*retrain"):
        EvidenceModel.load(old, kind="retention")
    with pytest.raises(ValidationError, match="after_question"):
        LearnedPolicy(old)
    # retrieval features did not change: a previous retrieval model still loads
    ret = EvidenceModel.load(_old_file(tmp_path / "r.json", "retrieval", RETRIEVAL_FEATURES),
                             kind="retrieval")
    assert ret.odds_scale == 1.0 and ret.names == RETRIEVAL_FEATURES
    shuffled = _old_file(tmp_path / "s.json", "retention", RETENTION_FEATURES[::-1])
    with pytest.raises(ValidationError, match="other order"):
        EvidenceModel.load(shuffled)
    bad = json.loads(old.read_text()) | {"format": "mars-evidence-learner/9"}
    (tmp_path / "f.json").write_text(json.dumps(bad))
    with pytest.raises(ValidationError, match="unknown evidence model format"):
        EvidenceModel.load(tmp_path / "f.json")


def test_evidence_probability_undoes_the_class_weighting() -> None:
    rows = [Row("retention", dict.fromkeys(RETENTION_FEATURES, 1.0), int(i % 10 < 2))
            for i in range(600)]  # uninformative features, 20 % positives
    model = train(rows, kind="retention", config=LearnConfig(epochs=30))
    x = model.matrix([r.features for r in rows[:1]])
    assert model.odds_scale == pytest.approx(1 / 4.0)  # no negative down-sampled here
    # weighted BCE: odds 4 × 0.2/0.8 = 1, i.e. 0.5; calibrated back to the base rate
    assert float(model.predict(x)[0]) == pytest.approx(0.5, abs=0.05)
    assert float(model.evidence_probability(x)[0]) == pytest.approx(0.2, abs=0.03)
    few = rows[:60] + [r for r in rows if r.label == 0][:400]  # 12 positives, 448 negatives
    assert train(few, kind="retention").odds_scale == pytest.approx(72 / 448 / 4.0)


def test_learned_policy_keeps_what_the_model_values(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    train(_retention_log().rows("retention"), kind="retention",
          config=LearnConfig(epochs=20)).save(path)
    with MemoryStore(budget=50, policy="learned", policy_params={"path": str(path)},
                     embedder=HashingEmbedder(dim=32)) as store:
        for i in range(6):
            store.add(FACTS[i])
            store.add(CHAT[i])
        active = [n.content for n in store.list(status="active")]
        chat = [t for t in active if not t.startswith("Ana: I adopted")]
        assert len(active) - len(chat) >= 3
        assert chat in ([], [CHAT[5]])  # only the memory just added can be spared
        assert store.stats()["policy"] == "learned"
    with pytest.raises(ConfigError, match="path="):
        LearnedPolicy()


def test_retrieval_reranker_reorders_store_hits() -> None:
    log = FeatureLog()
    with MemoryStore(budget=10_000, embedder=HashingEmbedder(dim=64)) as store:
        # two near misses besides the chat (phatic chat ranks under any hit now)
        for text in FACTS[:5] + CHAT[:5] + ["Ana: my dog sleeps all day",
                                            "Bo: we might move the party to Friday"]:
            store.add(text)
        hits = store.retrieve("Where did Ana move with her dog Rex?", budget_tokens=10_000,
                              read_only=True, relative_cutoff=0)  # all candidates
        log.log_hits("Where did Ana move with her dog Rex?", hits,
                     [h.id for h in hits if "Rex" in h.text])
        model = train(log.rows("retrieval"), kind="retrieval")
        ranked = rerank(model, "Where did Ana move with her dog Rex?", hits)
    assert {h.id for h in ranked} == {h.id for h in hits}
    assert "Rex" in ranked[0].text
    assert all(0.0 <= h.score <= 1.0 for h in ranked)
    assert RETENTION_FEATURES[:len(TEXT_FEATURES)] == TEXT_FEATURES


# --- the learned policy: per-token ranking, the previous input, reopen ---------------------

QUESTION = "Bo: where did you move last year?"
ANSWER = "Ana: we moved to Lisbon in 2021 with the kids"


def _answer_model() -> EvidenceModel:
    """A model for which an answer (after a question) is evidence and chat is not."""
    log = FeatureLog()
    for i in range(30):
        log.add("retention", retention_features(FACTS[i % len(FACTS)], after_question=True), 1)
        log.add("retention", retention_features(FACTS[i % len(FACTS)]), 0)
        log.add("retention", retention_features(CHAT[i % len(CHAT)], after_question=i % 2 == 0),
                0)
    return train(log.rows("retention"), kind="retention", config=LearnConfig(epochs=30))


def test_retention_features_and_questions() -> None:
    f = retention_features("Ana: I just adopted a dog yesterday, we met Rex at the shelter",
                           after_question=True)
    assert set(f) == set(RETENTION_FEATURES) and f["after_question"] == 1.0
    assert f["event_verbs"] > 0 and f["time_refs"] == 1.0 and f["self_rate"] > 0
    assert retention_features("Ana: hi")["after_question"] == 0.0
    assert asks_question("Bo: really? how?") and not asks_question("Bo: sure: ok")
    assert retention_features("Bo: wow, great, thanks you!")["reaction_rate"] > 0.5


def test_policy_ranks_by_expected_evidence_per_token(tmp_path: Path) -> None:
    model = _answer_model()
    path = str(tmp_path / "m.json")
    model.save(path)
    with MemoryStore(budget=10_000, policy="learned", policy_params={"path": path},
                     embedder=HashingEmbedder(dim=32)) as store:
        for text in [QUESTION, ANSWER, *CHAT[:4], FACTS[0], QUESTION, FACTS[1] + " " * 3]:
            store.add(text)
        pol = store.policy_for()
        assert isinstance(pol, LearnedPolicy)
        space = pol._spaces[store.config.default_namespace]
        nodes = {n.id: n for n in store.list(status="active")}
        after = {n.id: i > 0 and asks_question(list(nodes.values())[i - 1].content)
                 for i, n in enumerate(nodes.values())}
        for nid, node in nodes.items():  # p: the calibrated probability with its flag
            x = model.matrix([retention_features(node.content, after_question=after[nid])])
            assert space.p[nid] == pytest.approx(float(model.evidence_probability(x)[0]))
            assert space.key[nid] == pytest.approx(space.p[nid] / node.weight)
        answer = next(i for i, n in nodes.items() if n.content == ANSWER)
        assert after[answer] and space.p[answer] > max(
            space.p[i] for i, n in nodes.items() if n.content in CHAT)
    with MemoryStore(budget=24, policy="learned", policy_params={"path": path},
                     embedder=HashingEmbedder(dim=32)) as store:
        for text in [QUESTION, ANSWER, *CHAT[:6]]:
            store.add(text)
        kept = [n.content for n in store.list(status="active")]
        assert ANSWER in kept and QUESTION not in kept
        evicted = next(e for e in store.audit.events() if e.op.value == "evict")
        assert "expected evidence per token" in evicted.rationale
    plain = LearnedPolicy(model=model, per_token=False)
    assert plain.params()["per_token"] is False
    with pytest.raises(ConfigError, match="retention model"):
        LearnedPolicy(model=train(_retrieval_rows(), kind="retrieval"))


def _retrieval_rows() -> list[Row]:
    return [Row("retrieval", {n: float(i % 2) for n in RETRIEVAL_FEATURES}, i % 2)
            for i in range(20)]


def _policy_state(store: MemoryStore) -> dict[str, Any]:
    pol = store.policy_for()
    assert isinstance(pol, LearnedPolicy)
    space = pol._spaces[store.config.default_namespace]
    return {"p": dict(space.p), "flag": dict(space.flag), "newest": (space.last_asks,
                                                                      space.top_seq)}


def test_policy_remembers_the_previous_input_across_forgetting_and_reopen(
        tmp_path: Path) -> None:
    path = tmp_path / "model.json"
    _answer_model().save(path)

    def open_(where: Path | None) -> MemoryStore:
        kw: dict[str, Any] = {"budget": 10_000, "policy": "learned",
                              "policy_params": {"path": str(path)}, "clock": FakeClock(),
                              "embedder": HashingEmbedder(dim=32)}
        return MemoryStore.open(where, **kw) if where is not None else MemoryStore(**kw)

    steps: list[tuple[str, str]] = [
        ("add", QUESTION), ("add", ANSWER), ("add", CHAT[0]), ("forget", QUESTION),
        ("add", FACTS[0]), ("derived", "Ana lives in Lisbon"), ("add", QUESTION),
        ("forget", QUESTION), ("reopen", ""), ("add", ANSWER + " again"), ("add", CHAT[1])]

    def run(where: Path | None) -> tuple[dict[str, Any], MemoryStore]:
        store, ids = open_(where), {}
        for op, text in steps:
            if op == "add":
                ids[text] = store.add(text).id
            elif op == "derived":
                store.add(text, type="semantic",
                          provenance={"source": "summary", "derived_from": [ids[FACTS[0]]]})
            elif op == "forget":
                store.forget(ids[text])
            elif where is not None:
                store.close()
                store = open_(where)
        return _policy_state(store), store

    straight, s1 = run(None)
    reopened, s2 = run(tmp_path / "db")
    try:
        # content-keyed: ids differ between the two stores
        def by_text(state: dict[str, Any], store: MemoryStore) -> dict[str, Any]:
            text = {n.id: n.content for n in store.list(status="active")}
            return {k: sorted((text[i], v) for i, v in state[k].items()) for k in ("p", "flag")}

        assert by_text(straight, s1) == by_text(reopened, s2)
        flags = dict(by_text(reopened, s2)["flag"])
        assert flags[ANSWER] is True  # its question was forgotten before the reopen
        assert flags[ANSWER + " again"] is True  # after the forgotten newest question
        assert flags[FACTS[0]] is False and flags[CHAT[1]] is False
        assert "Ana lives in Lisbon" not in flags  # derived: not an input
        pol = s2.policy_for()
        assert isinstance(pol, LearnedPolicy)
        with pytest.raises(ValidationError):
            pol.load_state({"version": 1, "namespaces": {"default": {"newest": [1, "x"]}}})
        with pytest.raises(ValidationError, match="version"):
            pol.load_state({"version": 7, "namespaces": {}})
        assert _policy_state(s2) == reopened  # a refused state changes nothing
    finally:
        s1.close()
        s2.close()
