"""Restoring a backup never undoes an erasure.

A JSON-LD export made before a right-to-be-forgotten request still holds what was erased.
Importing it again — into the same store, or after the namespace was wiped — must not
bring the erased memories back: they are found by id, or by their text in their namespace
(the ``erase`` events keep keyed hashes of the texts), and the import is refused
(:class:`~mars_core.errors.ErasedMemoryError`, nothing written) or, when asked, imports
the rest without them.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mars_core.cli import app
from mars_core.errors import ConflictError, ErasedMemoryError, ValidationError
from mars_core.store import MemoryStore
from mars_core.testing import StoreFactory

KEY = bytes(range(32))
SECRET = "My HIV test came back positive"
MEM = "mars:memory/"


@pytest.fixture
def _open(make_store: StoreFactory) -> StoreFactory:
    """This module's stores: the tests' store factory with the module's defaults."""
    return make_store.with_defaults(index="numpy", audit_key=KEY)


@pytest.fixture
def backup(_open: StoreFactory, tmp_path: Path) -> tuple[Path, Path, str]:
    """A store whose "maya" namespace was exported, then had one memory erased."""
    path = tmp_path / "store"
    with _open(path=path) as store:
        store.add("I like green tea", namespace="maya")
        secret = store.add(SECRET, namespace="maya").id
        store.add("I work at the bakery", namespace="maya")
        store.add(SECRET, namespace="ben")  # the same words in another namespace
        store.write_jsonld(tmp_path / "backup.jsonld")
        store.erase(node_id=secret, namespace="maya")
    return path, tmp_path / "backup.jsonld", secret


def _contents(store: MemoryStore, namespace: str) -> list[str]:
    return sorted(n.content for n in store.list(namespace, status=None))


def test_the_backup_is_refused_and_nothing_changes(_open: StoreFactory,
                                                   backup: tuple[Path, Path, str]) -> None:
    path, doc, secret = backup
    with _open(path=path) as store:
        before = (_contents(store, "maya"), len(store.audit))
        with pytest.raises(ErasedMemoryError, match=r"1 memories .* erased") as caught:
            store.import_jsonld(doc, existing="skip")
        assert isinstance(caught.value, ConflictError)
        assert secret in str(caught.value) and SECRET not in str(caught.value)
        assert (_contents(store, "maya"), len(store.audit)) == before
        assert store.verify().ok


def _with_new_memory(doc: Path, like: str, text: str) -> dict[str, Any]:
    """The export, plus a memory it did not hold (a copy of ``like`` with a new id)."""
    data: dict[str, Any] = json.loads(doc.read_text(encoding="utf-8"))
    [item] = [i for i in data["@graph"] if i.get("@id") == MEM + like]
    data["@graph"].append({**item, "@id": MEM + str(uuid.uuid4()), "content": text})
    return data


def test_skipping_imports_the_rest_without_the_erased(_open: StoreFactory,
                                                      backup: tuple[Path, Path, str],
                                                      tmp_path: Path) -> None:
    path, doc, secret = backup
    data = _with_new_memory(doc, secret, "I moved to Porto")
    with _open(path=path) as store:
        store.erase(namespace="ben")
        with pytest.raises(ErasedMemoryError, match="2 memories"):
            store.import_jsonld(data, existing="skip")
        assert store.import_jsonld(data, existing="skip", erased="skip") == 1
        assert _contents(store, "maya") == ["I like green tea", "I moved to Porto",
                                            "I work at the bakery"]
        assert _contents(store, "ben") == []
        assert store.verify().ok
    with _open(path=tmp_path / "fresh") as fresh:  # a store that never erased anything
        assert fresh.import_jsonld(doc) == 4


def test_the_same_text_under_a_new_id_is_found_in_its_namespace_only(_open: StoreFactory,
        backup: tuple[Path, Path, str]) -> None:
    path, doc, secret = backup
    data: dict[str, Any] = json.loads(doc.read_text(encoding="utf-8"))
    renamed = str(uuid.uuid4())
    for item in data["@graph"]:
        if item.get("@id") == MEM + secret:
            item["@id"] = MEM + renamed
    others = [i for i in data["@graph"] if i.get("namespace") == "maya"
              and i.get("@id") != MEM + renamed]
    data["@graph"] = [i for i in data["@graph"] if i not in others]  # the two still here
    with _open(path=path) as store:
        with pytest.raises(ErasedMemoryError, match=renamed):
            store.import_jsonld(data, existing="skip")
        assert store.import_jsonld(data, erased="skip", existing="skip") == 0
        assert SECRET not in _contents(store, "maya")
        assert _contents(store, "ben") == [SECRET]  # never erased there: kept as it was


def test_a_bad_choice_is_a_typed_error(_open: StoreFactory, backup: tuple[Path, Path, str]) -> None:
    path, doc, _ = backup
    with _open(path=path) as store, pytest.raises(ValidationError, match="erased must be"):
        store.import_jsonld(doc, erased="yes")  # type: ignore[arg-type]


def test_mars_import_refuses_it_and_skips_when_asked(_open: StoreFactory,
                                                     backup: tuple[Path, Path, str]) -> None:
    path, doc, _ = backup
    runner = CliRunner()
    args = ["import", str(doc), "--path", str(path), "--index", "numpy"]
    env = {"MARS_AUDIT_KEY": KEY.hex()}
    refused = runner.invoke(app, args, env=env, catch_exceptions=False)
    assert refused.exit_code == 1 and "erased from this store" in refused.output, \
        refused.output
    assert SECRET not in refused.output
    done = runner.invoke(app, [*args, "--skip-erased"], env=env, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert "4 records already there (imported before) or erased here were skipped" in \
        done.output.replace("\n", " ")
    with _open(path=path) as store:
        assert SECRET not in _contents(store, "maya") and store.verify().ok
