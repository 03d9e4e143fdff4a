"""A world of stores that the refusal cases of a corpus share, built afresh every few cases.

A refusal case refuses and changes nothing (what it asserts), then forgets its
still-working memory, so the next case meets the same active memories; building the
world is most of a case's time. A case that fails leaves the world ``dirty``: the next
one gets a new world. Used by ``test_hostile_corpus`` and ``test_bad_inputs``.

A case compares the records before and after its call, so what it must check beyond that
is what a refusal could break without changing a record: the caches (``check_caches``).
:meth:`SharedWorld.check` runs that on every case and the whole of ``check_invariants``
on a world's first case and on its last, and :meth:`SharedWorld.finish` on the world still
open when the module ends: every world is checked whole after the cases it served.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Generic, TypeVar

__all__ = ["SharedWorld"]

W = TypeVar("W", bound=Any)  # a dataclass with a ``tmp`` field (each module's World)


@dataclass
class SharedWorld(Generic[W]):
    """One world shared by up to ``reuses`` cases of the same ``key`` (a store kind),
    checked whole by ``check_all``, and by ``check_caches`` for what a refusal can break
    without changing a record."""

    build: Callable[[Path, str], W]  # (the case's directory, its key)
    close: Callable[[W], None]
    reuses: int
    check_all: Callable[[W], None]
    check_caches: Callable[[W], None]
    key: str = ""
    world: W | None = None
    uses: int = 0
    dirty: bool = False

    def get(self, tmp: Path, key: str = "") -> W:
        """The shared world, its ``tmp`` the case's own directory (a new world when the
        last case failed, served ``reuses`` cases, or ran on another kind)."""
        if self.world is None or self.dirty or self.uses >= self.reuses or key != self.key:
            if self.world is not None:
                self.close(self.world)
            self.world, self.uses, self.key = self.build(tmp, key), 0, key
        self.uses += 1
        self.dirty = True  # until the case's last assertion passed
        return replace(self.world, tmp=tmp)

    def _whole(self) -> bool:
        """Whether the case being served is its world's first or last."""
        return self.uses in (1, self.reuses)

    def check(self, world: W) -> None:
        """After a refusal: the caches, or every invariant on a world's first and last
        case."""
        (self.check_all if self._whole() else self.check_caches)(world)

    def finish(self) -> None:
        """At the module's end: check the open world whole unless its last case already
        did (or failed), then close it."""
        if self.world is not None:
            try:
                if not self.dirty and not self._whole():
                    self.check_all(self.world)
            finally:
                self.close(self.world)
                self.world = None
