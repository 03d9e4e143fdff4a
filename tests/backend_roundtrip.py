"""A whole-store round on any backend, to compare a backend with the in-memory one.

``store_round(open_backend)`` runs the same script of adds (enough to force forgetting
by the budget), retrievals, an explicit ``forget`` and a reopen through
:class:`~mars_core.store.MemoryStore`, and returns what a user can observe: the JSON-LD
exports before and after the reopen, the retrieved ids, the audit length and whether the
audit chain verifies. Two backends that implement the protocol alike give equal results.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mars_core.backends.base import VectorBackend
from mars_core.clock import FakeClock
from mars_core.store import MemoryStore

__all__ = ["TEXTS", "store_round"]

AUDIT_KEY = bytes(range(32))

TEXTS = [
    ("Ana moved to Lisbon in May", "episodic", "u1"),
    ("Ana prefers green tea over coffee", "semantic", "u1"),
    ("Bruno is Ana's brother and lives in Porto", "social", "u1"),
    ("Book the flight to Porto before Friday", "task", "u1"),
    ("The quarterly report is due on the 30th", "task", "u2"),
    ("Carla likes hiking in the Alps every summer", "semantic", "u2"),
    ("Ana adopted a grey cat called Miso", "episodic", "u1"),
    ("Dario fixed the kitchen sink on Tuesday", "episodic", "u2"),
    ("Ana is allergic to peanuts", "semantic", "u1"),
    ("The team meets every Monday at nine", "semantic", "u2"),
]


def store_round(open_backend: Callable[[], VectorBackend]) -> dict[str, Any]:
    """Run the script on backends from ``open_backend`` (called twice: open, reopen)."""
    clock = FakeClock()
    out: dict[str, Any] = {}
    with MemoryStore(open_backend(), clock=clock, audit_key=AUDIT_KEY, budget=30) as store:
        ids = [store.add(text, type=kind, namespace=ns).id for text, kind, ns in TEXTS]
        out["first_hits"] = [h.id for h in store.retrieve("where does Ana live?",
                                                          namespace="u1", budget_tokens=40)]
        forgotten = next(i for i in ids if store.get(i).is_active)
        store.forget(forgotten)
        out["second_hits"] = [h.id for h in store.retrieve("weekly team meeting",
                                                           namespace="u2", budget_tokens=40)]
        out["export"] = store.export_jsonld()
        out["audit"] = len(store.audit)
        out["archived"] = sorted(n.id for n in store.list("u1", status="archived"))
    with MemoryStore(open_backend(), clock=clock, audit_key=AUDIT_KEY, budget=30) as store:
        out["reopened_export"] = store.export_jsonld()
        out["reopened_audit"] = len(store.audit)
        out["verified"] = bool(store.verify().ok)
        out["reopened_hits"] = [h.id for h in store.retrieve(
            "Ana's cat", namespace="u1", budget_tokens=40, read_only=True)]
    return out
