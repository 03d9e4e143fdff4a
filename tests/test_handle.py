"""A stable handle across versions of a memory (issue 34, item 3): content is immutable,
so every version is a memory of its own, and any version's id stands for the memory —
``update`` by it extends one line of versions, ``get(id, current=True)`` reads the current one,
and ``history`` keeps them all."""

from __future__ import annotations

import pytest

from mars_core import MemoryStore
from mars_core.errors import NotFoundError, ValidationError
from mars_core.tools import MemoryTools


def test_update_by_the_first_id_again_and_again_makes_one_line_of_versions() -> None:
    with MemoryStore(budget=2000) as store:
        first = store.add("Ana's flight is on Friday", type="semantic", namespace="ana")
        second = store.update(first.id, "Ana's flight is on Saturday", namespace="ana")
        third = store.update(first.id, "Ana's flight is on Sunday", namespace="ana")
        versions = store.history(first.id, namespace="ana")
        assert [v.content for v in versions] == [
            "Ana's flight is on Friday", "Ana's flight is on Saturday",
            "Ana's flight is on Sunday"]
        assert [v.status.value for v in versions] == ["archived", "archived", "active"]
        chain = store.explain(third.id, namespace="ana").provenance  # derivesFrom, nearest first
        assert [link.node_id for link in chain] == [second.id, first.id]  # a line, no fork
        for handle in (first.id, second.id, third.id):
            assert store.get(handle, namespace="ana", current=True).id == third.id
            assert [v.id for v in store.history(handle, namespace="ana")] == \
                [first.id, second.id, third.id]
        assert store.get(first.id, namespace="ana").content == "Ana's flight is on Friday"
        fourth = store.update(second.id, "Ana's flight is on Monday", namespace="ana")
        assert [v.id for v in store.history(first.id, namespace="ana")][-2:] == \
            [third.id, fourth.id]  # extended from the newest: no second branch
        assert [n.content for n in store.list("ana")] == ["Ana's flight is on Monday"]


async def test_the_async_twin_and_bad_calls() -> None:
    with MemoryStore(budget=2000) as store:
        first = await store.aadd("Bo keeps bees", type="semantic", namespace="bo")
        newer = await store.aupdate(first.id, "Bo keeps bees and hens", namespace="bo")
        assert (await store.aget(first.id, namespace="bo", current=True)).id == newer.id
        with pytest.raises(NotFoundError):  # ids never cross namespaces
            await store.aget(first.id, namespace="ana", current=True)
        with pytest.raises(NotFoundError):
            await store.aupdate(first.id, "x", namespace="ana")
        with pytest.raises(ValidationError, match="current"):
            await store.aget(first.id, namespace="bo", current="yes")  # type: ignore[arg-type]
        assert [n.content for n in await store.alist("bo")] == ["Bo keeps bees and hens"]


def test_the_tools_forget_the_current_version_by_any_handle() -> None:
    with MemoryStore(budget=2000) as store:
        first = store.add("Ana likes tea", type="semantic")
        newer = store.update(first.id, "Ana likes green tea")
        assert MemoryTools(store).forget(first.id) == f"Forgot {first.id}."
        assert store.get(newer.id).status.value == "archived" and store.list() == []


def test_a_restored_older_version_is_the_current_one() -> None:
    """After the newest version was forgotten and an older one restored, the older one is
    what the memory says now: update and current=True take it, as before the handle."""
    with MemoryStore(budget=2000) as store:
        first = store.add("Bo lives in Porto", type="semantic")
        second = store.update(first.id, "Bo lives in Faro")
        store.forget(second.id)
        store.restore(first.id)
        assert store.get(second.id, current=True).id == first.id
        third = store.update(first.id, "Bo lives in Braga")
        assert store.explain(third.id).provenance[0].node_id == first.id
        assert store.get(first.id).status.value == "archived"
