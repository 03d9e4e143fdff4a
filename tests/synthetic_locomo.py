"""A small LoCoMo-shaped data set for the benchmarks' tests (the real one is never copied).

Every ``fact_every``-th turn says where its speaker moved after adopting a pet, and a
question asks it back with that turn as evidence; the other turns are chit-chat.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["CITIES", "PETS", "conversation", "write_locomo"]

PETS = ["dog", "cat", "parrot", "horse", "rabbit", "turtle", "snake", "hamster"]
CITIES = ["Lisbon", "Oslo", "Paris", "Rome", "Madrid", "Vienna", "Prague", "Dublin"]


def conversation(k: int, *, turns: int, fact_every: int, chat: Sequence[str],
                 per_session: int | None = None,
                 date: str = "1 pm on {s} May, 2023") -> dict[str, Any]:
    """Conversation ``c{k}`` (facts rotated by ``k``) in sessions of ``per_session`` turns
    (``None``: one session); ``date`` is formatted with the session's number ``s``."""
    sessions: dict[str, Any] = {}
    qa = []
    for i in range(turns):
        speaker = "Ana" if i % 2 == 0 else "Bo"
        s = 1 + i // per_session if per_session else 1
        if i % fact_every == 0:
            j = (i // fact_every + k) % len(PETS)
            text = f"I adopted a {PETS[j]} last year and we moved to {CITIES[j]}"
            qa.append({"question": f"Where did {speaker} move after adopting the {PETS[j]}?",
                       "answer": CITIES[j], "category": 1 + (i // fact_every) % 4,
                       "evidence": [f"D{s}:{i + 1}"]})
        else:
            text = chat[i % len(chat)]
        sessions.setdefault(f"session_{s}", []).append(
            {"speaker": speaker, "dia_id": f"D{s}:{i + 1}", "text": text})
        sessions[f"session_{s}_date_time"] = date.format(s=s)
    return {"sample_id": f"c{k}", "qa": qa,
            "conversation": {"speaker_a": "Ana", "speaker_b": "Bo", **sessions}}


def write_locomo(path: Path, count: int = 3, **kw: Any) -> Path:
    """Write ``count`` conversations (:func:`conversation`'s keywords) as a LoCoMo file."""
    path.write_text(json.dumps([conversation(k, **kw) for k in range(count)]),
                    encoding="utf-8")
    return path
