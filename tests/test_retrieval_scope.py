"""Retrieval scope of seed 000 §4.3: a jurisdiction filter and department templates.

"The retrieve endpoint filters candidates by sensitivity and jurisdiction before ranking";
"policy templates can be scoped by jurisdiction and department, enabling differential
treatment of the same content". The jurisdiction is the memory's provenance's; a template is
a named scope in ``StoreConfig.retrieval_templates``; the narrower of a template and a
call's own filters wins.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mars_core import MemoryStore
from mars_core.errors import ConfigError, ValidationError
from mars_core.scope import check_jurisdictions, covers, narrow

TEMPLATES = {
    "support": {"description": "first-line support: no sensitive or personal episodes",
                "max_sensitivity": 0.3, "types": ["semantic"]},
    "eu-hr": {"description": "HR in the EU", "jurisdictions": ["EU"], "max_sensitivity": 0.9},
}
FACTS = [("Ana works at Acme in Berlin", "semantic", "EU-DE", 0.1),
         ("Ana works at Acme in Austin", "semantic", "US-TX", 0.1),
         ("Ana works at Acme, her salary is 90k", "semantic", "EU", 0.8),
         ("Ana told me at Acme she was tired", "episodic", None, 0.2)]
QUESTION = "where does Ana work at Acme"


def store(**kw: Any) -> MemoryStore:
    s = MemoryStore(retrieval_templates=TEMPLATES, sensitivity_scoring=False, **kw)
    for text, mtype, where, sens in FACTS:
        s.add(text, type=mtype, sensitivity=sens,
              provenance={"jurisdiction": where} if where else None)
    return s


def seen(s: MemoryStore, **kw: Any) -> set[str]:
    hits = s.retrieve(QUESTION, relative_cutoff=0, read_only=True, redact=False, **kw)
    return {h.node.content for h in hits}  # the stored text: scope, not masks, is tested


def test_the_jurisdiction_filter_keeps_the_codes_and_their_subdivisions() -> None:
    with store() as s:
        assert len(seen(s)) == 4
        assert seen(s, jurisdiction="EU") == {FACTS[0][0], FACTS[2][0]}
        assert seen(s, jurisdiction="eu-de") == {FACTS[0][0]}
        assert seen(s, jurisdiction=["US", ""]) == {FACTS[1][0], FACTS[3][0]}
        assert seen(s, jurisdiction=[]) == set()
        assert seen(s, jurisdiction="EUR") == set()  # a prefix is not a subdivision


def test_a_template_narrows_and_a_call_cannot_widen_it() -> None:
    with store() as s:
        assert seen(s, template="support") == {FACTS[0][0], FACTS[1][0]}
        # the call asks for more sensitive memories and for episodes: the template wins
        assert seen(s, template="support", max_sensitivity=1.0,
                    types=["semantic", "episodic"]) == {FACTS[0][0], FACTS[1][0]}
        assert seen(s, template="eu-hr") == {FACTS[0][0], FACTS[2][0]}
        assert seen(s, template="eu-hr", jurisdiction="US") == set()
        assert seen(s, template="eu-hr", jurisdiction="EU-DE") == {FACTS[0][0]}
        assert seen(s, template="eu-hr", max_sensitivity=0.5) == {FACTS[0][0]}
        with pytest.raises(ValidationError, match=r"no retrieval template 'legal'.*eu-hr"):
            s.retrieve(QUESTION, template="legal")
        with pytest.raises(ValidationError, match="template must be the name"):
            s.retrieve(QUESTION, template=3)  # type: ignore[arg-type]


def test_render_context_recalls_within_the_scope() -> None:
    with store() as s:
        everything = s.render_context(QUESTION, redact=False)
        assert "Austin" in everything and "Berlin" in everything
        hr = s.render_context(QUESTION, template="eu-hr", redact=False)
        assert "Berlin" in hr and "Austin" not in hr
        us = s.render_context(QUESTION, jurisdiction="US", redact=False)
        assert "Austin" in us and "Berlin" not in us


@pytest.mark.parametrize("bad", [3, b"EU", "E U", "x" * 33, ["EU", 1], {"EU": 1.5}])
def test_bad_jurisdictions_are_typed_errors_and_change_nothing(bad: Any) -> None:
    with store() as s:
        before = len(s.audit)
        with pytest.raises(ValidationError, match="jurisdiction"):
            s.retrieve(QUESTION, jurisdiction=bad)
        assert len(s.audit) == before


def test_templates_are_checked_and_recorded_with_the_store(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="types"):
        MemoryStore(retrieval_templates={"x": {"types": "semantic"}})
    with pytest.raises(ConfigError, match="max_sensitivity"):
        MemoryStore(retrieval_templates={"x": {"max_sensitivity": 1.5}})
    with pytest.raises(ConfigError, match="jurisdiction"):
        MemoryStore(retrieval_templates={"x": {"jurisdictions": ["E U"]}})
    with pytest.raises(ConfigError, match="not a field"):
        MemoryStore(retrieval_templates={"x": {"department": "hr"}})
    with MemoryStore.open(tmp_path / "s", retrieval_templates=TEMPLATES,
                          sensitivity_scoring=False) as s:
        s.add("Ana works at Acme in Berlin", type="semantic",
              provenance={"jurisdiction": "EU-DE"})
    with MemoryStore.open(tmp_path / "s") as again:  # the recorded templates
        hits = again.retrieve(QUESTION, template="eu-hr", redact=False)
        assert [h.node.content for h in hits] == ["Ana works at Acme in Berlin"]
        assert again.config.retrieval_templates["support"].max_sensitivity == 0.3


codes = st.sampled_from(["", "EU", "EU-DE", "EU-FR", "US", "US-CA", "UK"])


@settings(max_examples=200, deadline=None)
@given(st.frozensets(codes, max_size=3), st.frozensets(codes, max_size=3), codes)
def test_narrowing_admits_exactly_what_both_scopes_admit(a: frozenset[str],
                                                         b: frozenset[str], j: str) -> None:
    both = narrow(a, b)
    assert both is not None
    assert covers(both, j or None) == (covers(a, j or None) and covers(b, j or None))
    assert narrow(None, b) == b and narrow(a, None) == a


def test_codes_are_normalised() -> None:
    assert check_jurisdictions(" eu-de ") == frozenset({"EU-DE"})
    assert check_jurisdictions(None) is None
    assert covers(frozenset({""}), None) and not covers(frozenset({""}), "EU")


def test_the_framework_retrievers_take_the_scope() -> None:
    from langchain_mars import MarsRetriever as LCRetriever
    from llamaindex_mars import MarsRetriever as LIRetriever

    with store() as s:
        lc = LCRetriever(store=s, k=10, jurisdiction="EU", read_only=True, redact=False)
        assert {d.page_content for d in lc.invoke(QUESTION)} == {FACTS[0][0], FACTS[2][0]}
        lc_t = LCRetriever(store=s, k=10, template="support", read_only=True, redact=False)
        assert {d.page_content for d in lc_t.invoke(QUESTION)} == {FACTS[0][0], FACTS[1][0]}
        with pytest.raises(ValidationError, match="no retrieval template"):
            LCRetriever(store=s, template="legal")
        li = LIRetriever(s, k=10, template="eu-hr", jurisdiction="EU-DE", read_only=True,
                         redact=False)
        assert [n.node.get_content() for n in li.retrieve(QUESTION)] == [FACTS[0][0]]
        with pytest.raises(ValidationError, match="jurisdiction"):
            LIRetriever(s, jurisdiction=7)  # type: ignore[arg-type]


def test_the_middleware_recalls_within_its_template() -> None:
    from langchain_mars import MarsMemoryMiddleware

    with store() as s:
        with pytest.raises(ValidationError, match="no retrieval template"):
            MarsMemoryMiddleware(s, template="legal")
        m = MarsMemoryMiddleware(s, template="eu-hr", jurisdiction=["eu"])
        assert (m.template, m.jurisdiction) == ("eu-hr", ["EU"])


def test_the_llamaindex_memory_recalls_within_its_template() -> None:
    from llama_index.core.llms import ChatMessage

    from llamaindex_mars import MarsMemory

    with store() as s:
        with pytest.raises(ValidationError, match="no retrieval template"):
            MarsMemory(s, template="legal")
        m = MarsMemory(s, template="eu-hr", token_limit=400, redact=False)
        m.put(ChatMessage(role="user", content=QUESTION))
        recalled = m.get()[0].content or ""
        assert "Berlin" in recalled and "Austin" not in recalled
