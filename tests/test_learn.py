"""The evidence learner: features, training, frozen model file, reranker, learned policy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mars_core.embeddings import HashingEmbedder
from mars_core.errors import ConfigError, ValidationError
from mars_core.learn import (
    RETENTION_FEATURES,
    EvidenceModel,
    FeatureLog,
    LearnConfig,
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
        for text in FACTS[:5] + CHAT[:5]:
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
    assert RETENTION_FEATURES[0] == "log_words"
