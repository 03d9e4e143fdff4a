"""Entity erasure reaches partial mentions of a person's name (issue 19, item 7).

``erase(entity="Jane Doe")`` also erases "Mr Doe phoned", "Jane's invoice", "mr doe"
when no other person of the namespace shares that part of the name; the mentions that
are ambiguous (another person shares the part, or an everyday word such as "Rose" opens
a sentence) are kept and listed in the receipt. The rules: ``mars_core.privacy.names``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest
from invariants import check_invariants
from test_erasure import STORE_DEFAULTS  # one kind of store for the erasure tests
from typer.testing import CliRunner

from mars_core import MemoryStore
from mars_core.cli import app
from mars_core.privacy.names import PersonName, name_words
from mars_core.privacy.receipts import AmbiguousMention, ErasureReceipt
from mars_core.testing import StoreFactory, write_summary


@pytest.fixture
def mk(make_store: StoreFactory) -> StoreFactory:
    """The erasure tests' stores (test_erasure's)."""
    return make_store.with_defaults(**STORE_DEFAULTS)


def summarise(store: MemoryStore, ids: Sequence[str], text: str) -> str:
    """Make a summary the way Reflection would (through the store's staging path), with
    an abstractive text: one that does not name anybody, so only the cascade reaches it
    (a summary that names the person is a target like any memory)."""
    from mars_core.policies import Summary

    return write_summary(store, Summary(tuple(ids), text, 0.1, 0.0)).id


def word_rx(parts: Iterable[str]) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, parts)) + r")(?!\w)", re.I)


def files_naming(root: Path, parts: Iterable[str]) -> list[str]:
    """``file: word`` for every file under ``root`` holding a name part (any case)."""
    rx = re.compile(rb"(?<![A-Za-z])(?:" + b"|".join(p.encode() for p in parts)
                    + rb")(?![A-Za-z])", re.I)
    return [f"{p.relative_to(root)}: {m.group().decode()}" for p in sorted(root.rglob("*"))
            if p.is_file() for m in rx.finditer(p.read_bytes())]


def outputs_naming(store: MemoryStore, parts: Sequence[str], receipt: ErasureReceipt,
                   ids: Iterable[str], *, others: Sequence[str] = (),
                   namespace: str | None = None) -> list[str]:
    """Every public output that names the person by a part of the name, except the
    memories the receipt lists for review. ``others``: other people's full names, which
    legitimately contain a shared part, are blanked first."""
    kept = {a.node_id for a in receipt.ambiguous}
    texts: list[tuple[str, str]] = []
    listed = [n for n in store.list(namespace, status=None) if n.id in kept]
    texts += [(f"list {n.id}", n.model_dump_json())
              for n in store.list(namespace, status=None) if n.id not in kept]
    for q in (*parts, " ".join(parts), "invoice"):
        hits = store.retrieve(q, namespace=namespace, read_only=True)
        texts += [(f"retrieve {q}", h.node.model_dump_json())
                  for h in hits if h.node.id not in kept]
        context = store.render_context(q, namespace=namespace)
        for n in listed:
            context = context.replace(n.content, "")
        texts.append((f"render_context {q}", context))
    doc = store.export_jsonld(namespace=namespace)
    texts += [("export", json.dumps(item)) for item in doc["@graph"]
              if str(item.get("@id", "")).rsplit("/", 1)[-1] not in kept]
    for nid in ids:
        if nid not in kept:
            exp = store.explain(nid)
            texts.append((f"explain {nid}", exp.render()
                          + "".join(e.model_dump_json() for e in exp.events)
                          + (exp.node.model_dump_json() if exp.node else "")))
    texts += [("audit", e.model_dump_json()) for e in store.audit.events()]
    rx, blank = word_rx(parts), word_rx(others) if others else None
    return [f"{where}: {m.group()}" for where, text in texts
            for m in rx.finditer(blank.sub("", text) if blank else text)]


# --- the rules, on texts ------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "Mr Doe phoned about the invoice", "Mrs. Doe phoned", "MS DOE phoned", "Dr Doe called",
    "Prof. Doe wrote back", "mr doe called again", "I forwarded Doe's invoice",
    "Jane's cat is ill", "talked to jane today", "JANE said no", "Doe phoned",
    "Dr. Jane Doe's report", "jane   DOE", "Ms Doe’s car",
])
def test_titles_possessives_and_any_case_are_mentions(text: str) -> None:
    assert PersonName.resolve("Jane Doe").scan(text).erase


@pytest.mark.parametrize("text", [
    "Does the printer work?", "Mr Doherty called", "Janet is away", "a janeiro trip",
])
def test_whole_words_only(text: str) -> None:
    scan = PersonName.resolve("Jane Doe").scan(text)
    assert not scan.erase and scan.ambiguous == ()


def test_name_words_drop_titles_suffixes_and_the_possessive() -> None:
    assert name_words("Prof. Dr. Jane Doe Jr.'s") == ("Jane", "Doe")
    assert name_words("Jane Lord Sr.") == ("Jane", "Lord")  # a title word as a surname
    name = PersonName.resolve("Ana Lima-Souza van Dijk")
    assert name.parts == ("Ana", "Lima", "Souza", "Dijk")  # no particle, pieces of the hyphen
    assert name.scan("Sr. Souza called").erase and not name.scan("van Gogh").erase
    assert PersonName.resolve("Dr Jane Doe").scan("Jane Doe called").full
    assert PersonName.resolve("Jane Doe (CEO)").scan("ask jane doe (ceo)").full  # as written


def test_another_person_sharing_a_part_makes_it_ambiguous() -> None:
    name = PersonName.resolve("Jane Doe", ["John Doe runs the bakery", "Jane Doe called"])
    assert name.shared == {"doe"}
    assert name.scan("Mr Doe phoned").ambiguous == (("Doe", "shared"),)
    assert name.scan("John Doe's bakery").ambiguous == ()  # John's name is not a mention
    assert name.scan("Jane and John Doe met").erase  # "Jane" alone is unambiguous


def test_what_is_not_another_person() -> None:
    """Single names, titled names, the person's own name in another order, and names
    behind "Dear"/"Call" are not other people; a name seen in a payload is."""
    texts = ["Mr Doe phoned", "Dear Jane, thanks", "Call Jane tomorrow", "Doe Jane wrote",
             "Thanks Jane Doe", "Jane said hi"]
    assert PersonName.resolve("Jane Doe", texts).shared == frozenset()
    assert PersonName.resolve("Jane Doe", texts, names=["Jane Smith"]).shared == {"jane"}


def test_everyday_words_count_only_when_written_as_a_name() -> None:
    name = PersonName.resolve("Jane Rose")
    assert name.scan("she rose early").ambiguous == () and not name.scan("she rose early").erase
    assert not name.scan("the rose garden").erase
    assert not name.scan("the doctor rose").erase  # a lower-case "doctor" is no title
    for text in ("I met Rose at the station", "Ms Rose phoned", "ms. rose phoned",
                 "dr rose called", "we asked ROSE"):
        assert name.scan(text).erase, text
    for text in ("Rose called yesterday", "Fine. Rose will come", "- Rose's invoice"):
        assert name.scan(text).ambiguous == (("Rose", "common word"),), text


# --- the store ------------------------------------------------------------------------------

def _jane_doe(store: MemoryStore) -> tuple[list[str], str, str]:
    """A namespace where Jane Doe is the only Jane and the only Doe; returns the ids that
    name her, a summary that names her in one member, and an unrelated memory."""
    ids = [store.add(t).id for t in (
        "Jane Doe's phone is 555-0199",
        "Mr Doe phoned about the invoice",
        "DR. DOE sent the quarterly report",
        "the meeting with jane is on Friday",
        "I forwarded Doe's invoice to accounting",
    )]
    ids.append(store.add("Jane prefers tea", type="semantic",
                         payload={"concept": "tea"}).id)
    ids.append(store.add("a call", type="social",
                         payload={"entity": "Ms Doe", "relationship_type": "client"}).id)
    ids += [n.id for n in store.observe("user", "My colleague Jane Doe moved to Porto.")]
    keep = [store.add(t).id for t in ("Bo likes jazz", "Does the printer work?",
                                      "the trail was steep", "we saw goats")]
    summary = summarise(store, [ids[1], keep[2], keep[3]], "a call, a steep trail and goats")
    store.retrieve("Mr Doe invoice")
    return ids, summary, keep[0]


@pytest.mark.parametrize("index", ["numpy", "chroma"])
def test_erase_by_full_name_leaves_no_part_of_it_anywhere(mk: StoreFactory,
                                                          tmp_path: Path, index: str) -> None:
    if index == "chroma":
        pytest.importorskip("chromadb")
    path = tmp_path / "s"
    with mk(path=path, index=index) as store:
        ids, summary, bo = _jane_doe(store)
        nothing = ErasureReceipt("entity", "default", (), (), {}, (), "")
        assert files_naming(path, ["jane", "doe"])  # the scanners see them while stored
        assert outputs_naming(store, ["Jane", "Doe"], nothing, ids)
        receipt = store.erase(entity="Jane Doe")
        assert set(ids) <= set(receipt.erased) and receipt.ambiguous == ()
        (old, new), = receipt.regenerated
        assert old == summary  # members in provenance order
        assert set(store.get(new).content.split(" / ")) == {"the trail was steep", "we saw goats"}
        assert bo not in receipt.erased and store.get(bo).content == "Bo likes jazz"
        assert "Does the printer work?" in [n.content for n in store.list()]
        assert store.explain(ids[1]).rationale == \
            "erased on request: names the person by part of the name"
        assert store.explain(ids[0]).rationale == "erased on request"
        assert outputs_naming(store, ["Jane", "Doe"], receipt, [*ids, summary, new]) == []
        assert "Jane" not in receipt.render() and "Doe" not in receipt.render()
        assert files_naming(path, ["jane", "doe"]) == []
        check_invariants(store)
    assert files_naming(path, ["jane", "doe"]) == []
    with mk(path=path, index=index) as again:
        assert again.verify().ok
        assert outputs_naming(again, ["Jane", "Doe"], receipt, ids) == []


def test_a_shared_surname_is_listed_not_erased(mk: StoreFactory, tmp_path: Path) -> None:
    path = tmp_path / "s"
    with mk(path=path) as store:
        full = store.add("Jane Doe called about the contract")
        john = store.add("John Doe runs the bakery on Elm Street")
        mr = store.add("Mr Doe phoned about the invoice")
        both = store.add("Jane and Mr Doe met for lunch")
        jane = store.add("Jane sent the slides")
        summ = summarise(store, [mr.id, jane.id, john.id], "calls, a bakery and slides")
        receipt = store.erase(entity="Jane Doe")
        assert set(receipt.erased) == {full.id, both.id, jane.id}
        (old, new), = receipt.regenerated
        assert old == summ
        assert receipt.ambiguous == (AmbiguousMention(mr.id, "Doe", "shared"),
                                     AmbiguousMention(new, "Doe", "shared"))
        assert store.get(mr.id).content == "Mr Doe phoned about the invoice"
        assert store.get(john.id).content.startswith("John Doe")  # another person: untouched
        text = receipt.render()
        assert f"{mr.id}: 'Doe': another person in the namespace has this name part" in text
        assert "invoice" not in text and "Mr" not in text  # ids and the part, no other text
        assert outputs_naming(store, ["Jane", "Doe"], receipt,
                              [full.id, mr.id, both.id, jane.id, summ, new],
                              others=["John Doe"]) == []
        check_invariants(store)
    assert files_naming(path, ["jane"]) == []


def test_a_shared_first_name_is_listed_and_the_surname_still_erased(mk: StoreFactory) -> None:
    store = mk()
    store.add("Jane Smith is the new accountant")
    call = store.add("Jane called twice")
    ms = store.add("Ms Doe left a voicemail")
    receipt = store.erase(entity="Jane Doe")
    assert receipt.erased == (ms.id,)
    assert receipt.ambiguous == (AmbiguousMention(call.id, "Jane", "shared"),)


def test_people_known_only_from_payloads_count(mk: StoreFactory) -> None:
    store = mk()
    store.add("my client", type="social", payload={"entity": "John Doe"})
    mr = store.add("Mr Doe phoned")
    receipt = store.erase(entity="Jane Doe")
    assert receipt.erased == () and receipt.ambiguous == (AmbiguousMention(mr.id, "Doe",
                                                                           "shared"),)


def test_a_name_part_that_is_an_everyday_word(mk: StoreFactory) -> None:
    """Decision: lower case it is the word (kept, not listed); written as a name it is a
    mention (erased); capitalised at the start of a sentence it is listed for review."""
    store = mk()
    word = [store.add(t).id for t in ("She rose early and left", "the rose garden is in bloom",
                                      "the baker's shop opens at six")]
    named = [store.add(t).id for t in ("I met Rose at the station", "Ms Rose phoned",
                                       "mr baker called about the oven")]
    start = [store.add(t).id for t in ("Rose called yesterday", "Baker's invoice is due")]
    r1 = store.erase(entity="Jane Rose")
    r2 = store.erase(entity="Tom Baker")
    assert set(r1.erased) | set(r2.erased) == set(named)
    assert r1.ambiguous == (AmbiguousMention(start[0], "Rose", "common word"),)
    assert r2.ambiguous == (AmbiguousMention(start[1], "Baker", "common word"),)
    assert [n.id for n in store.list()] == [*word, *start]


def test_exact_erasure_and_single_names_leave_parts_alone(mk: StoreFactory) -> None:
    store = mk()
    mr = store.add("Mr Doe phoned")
    assert store.erase(entity="Jane Doe", partial=False).erased == ()
    assert store.get(mr.id).content == "Mr Doe phoned"
    ana = store.add("Mrs Ana Lima called")
    assert store.erase(entity="Ana").erased == (ana.id,)  # a one-part name: as before


def test_partial_erasure_and_its_ambiguity_are_per_namespace(mk: StoreFactory) -> None:
    store = mk()
    store.add("John Doe is my neighbour", namespace="u2")
    other = store.add("Mr Doe phoned", namespace="u2")
    mine = store.add("Mr Doe phoned", namespace="u1")
    store.add("Jane Doe is a client", namespace="u1")
    receipt = store.erase(entity="Jane Doe", namespace="u1")
    assert mine.id in receipt.erased and receipt.ambiguous == ()  # u2's John is not u1's
    assert store.get(other.id, namespace="u2").content == "Mr Doe phoned"


def test_cli_exact_flag(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with MemoryStore.open(path) as store:  # its audit key in the run's key ring, for the CLI
        store.add("Mr Doe phoned")
    runner = CliRunner()
    out = runner.invoke(app, ["erase", "--entity", "Jane Doe", "--exact", "--path", str(path),
                              "--yes"], catch_exceptions=False).output
    assert "0 memories removed" in out
    out = runner.invoke(app, ["erase", "--entity", "Jane Doe", "--path", str(path), "--yes"],
                        catch_exceptions=False).output
    assert "1 memories removed" in out
