"""User privacy preferences, consent, private mode and purpose limitation."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from invariants import check_invariants

from mars_core import FakeClock, NotFoundError, ValidationError
from mars_core.errors import BlockedByPreferenceError
from mars_core.privacy.preferences import PrivacyPreferences
from mars_core.testing import StoreFactory


@pytest.fixture
def mk(make_store: StoreFactory) -> StoreFactory:
    """This module's stores: the tests' store factory with the module's defaults."""
    return make_store.with_defaults(audit_key=bytes(range(32)), nlp="rules", budget=5000)


def test_private_entities_raise_sensitivity_and_descendants_inherit(mk: StoreFactory) -> None:
    s = mk()
    ep = s.add("My sister Ines had a rough week")
    fact = s.add("She is tired", type="semantic", provenance={"derived_from": [ep.id]})
    other = s.add("Bo likes jazz")
    s.set_preferences({"private_entities": ["Ines"]})
    assert s.get(ep.id).sensitivity == pytest.approx(0.9)
    assert s.get(fact.id).sensitivity == pytest.approx(0.9)  # inherited via derivesFrom
    assert s.get(other.id).sensitivity == 0.0
    new = s.add("Ines called today")
    assert new.sensitivity == pytest.approx(0.9)
    events = [e for e in s.audit.events() if e.op.value == "metadata"]
    assert {e.node_ids[0] for e in events} == {ep.id, fact.id}
    assert all("Ines" not in e.model_dump_json() for e in s.audit.events())
    s.set_preferences({})  # lifting the preference restores the detected sensitivity
    assert s.get(ep.id).sensitivity == s.get(ep.id).signals["sensitivity_detected"]
    check_invariants(s)


def test_blocked_entities_and_conversations_are_never_stored(mk: StoreFactory) -> None:
    s = mk()
    s.set_preferences({"blocked_entities": ["Project Falcon"], "blocked_conversations": ["c9"]})
    before = len(s.audit)
    with pytest.raises(BlockedByPreferenceError):
        s.add("the Project Falcon budget is 2M")
    assert s.observe("user", "anything at all", conversation_id="c9") == []
    assert s.observe("user", "news about project falcon") == []
    assert len(s.audit) == before and s.list() == []
    assert s.observe("user", "an ordinary turn")


def test_private_mode_needs_consent_and_consent_can_be_revoked(mk: StoreFactory) -> None:
    clock = FakeClock()
    s = mk(clock=clock)
    secret = s.add("I was diagnosed with diabetes last year")  # health -> sensitive
    plain = s.add("I like jazz concerts")
    assert secret.sensitivity > 0.5
    s.set_preferences({"private_mode": True})
    ids = {h.id for h in s.retrieve("diabetes", read_only=True)}
    assert secret.id not in ids
    grant = s.grant_consent(types=["episodic"], entities=["diabetes"], purpose="doctor visit",
                            expires_at=clock.now() + timedelta(hours=1))
    assert secret.id in {h.id for h in s.retrieve("diabetes", read_only=True)}
    clock.advance(timedelta(hours=2))  # expired
    assert secret.id not in {h.id for h in s.retrieve("diabetes", read_only=True)}
    s.revoke_consent(grant.id)
    with pytest.raises(NotFoundError):
        s.revoke_consent(grant.id)
    assert plain.id in {h.id for h in s.retrieve("jazz", read_only=True)}
    ops = [e.op.value for e in s.audit.events()]
    assert ops.count("config") >= 3  # private mode on, consent granted, consent revoked


def test_preferences_survive_reopen(mk: StoreFactory, tmp_path: Path) -> None:
    with mk(path=tmp_path / "db") as s:
        s.set_preferences({"private_entities": ["Ines"], "private_mode": True})
    with mk(path=tmp_path / "db") as s2:
        prefs = s2.preferences()
        assert prefs.private_entities == ("Ines",) and prefs.private_mode
        assert s2.add("Ines is coming over").sensitivity == pytest.approx(0.9)


def test_bad_preferences_are_refused_and_change_nothing(mk: StoreFactory) -> None:
    s = mk()
    s.add("hello there")
    before = (s.export_jsonld(), len(s.audit))
    for bad in ({"private_floor": 2}, {"retention_days": {"episodic": 0}},
                {"unknown": 1}, {"entity_offsets": {"x": 3}}):
        with pytest.raises(ValidationError):
            s.set_preferences(bad)
    with pytest.raises(ValidationError):
        s.grant_consent(types=["nonsense"])
    assert (s.export_jsonld(), len(s.audit)) == before
    assert s.preferences() == PrivacyPreferences()


def test_recall_for_a_goal_leaves_out_unrelated_social_details(mk: StoreFactory) -> None:
    s = mk()
    for role, text in [("user", "My sister Ines is a nurse in Porto."),
                       ("user", "My friend Bo collects stamps."),
                       ("user", "Remind me to book a table for Ines's birthday on Friday.")]:
        s.observe(role, text, conversation_id="c1", speaker="Maya")
    texts = [h.text for h in s.recall(goal="Ines birthday table")]
    assert not any("Bo" in t and "stamps" in t for t in texts if "friend" in t.casefold())
    social = [h for h in s.recall(goal="Ines birthday table") if h.node.type.value == "social"]
    assert all("Ines" in h.text for h in social)
