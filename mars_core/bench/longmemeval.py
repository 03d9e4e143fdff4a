"""LongMemEval loader: each record becomes a conversation with one question.

Turns get the id ``"<session_id>:<index>"`` and the text ``"role: content"``; the evidence
is the turns marked ``has_answer`` (turn level), else every turn of the answer sessions.
The question's category is 4 (single-hop) so the LoCoMo tasks run unchanged; budgets are
seed 001's 256/512/1024 (the evidence turn alone is ~400 words).

Examples:
    >>> import json, tempfile, os
    >>> rec = {"question_id": "q1", "question": "What degree?", "answer": "BA",
    ...        "answer_session_ids": ["s2"], "haystack_session_ids": ["s1", "s2"],
    ...        "haystack_dates": ["d1", "d2"],
    ...        "haystack_sessions": [[{"role": "user", "content": "hi"}],
    ...                              [{"role": "user", "content": "I got a BA",
    ...                                "has_answer": True}]]}
    >>> path = os.path.join(tempfile.mkdtemp(), "lme.json")
    >>> with open(path, "w") as fh:
    ...     json.dump([rec], fh)
    >>> conv = load_longmemeval(path)[0]
    >>> conv.turns[1].text, conv.questions[0].evidence
    ('user: I got a BA', ('s2:0',))
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mars_core.bench.locomo_data import Conversation, Question, Turn, read_json_list
from mars_core.errors import ValidationError

__all__ = ["LME_BUDGETS", "load_longmemeval"]

LME_BUDGETS: tuple[int, ...] = (256, 512, 1024)


def load_longmemeval(path: str | os.PathLike[str]) -> list[Conversation]:
    """Load a LongMemEval JSON file (a list of records).

    Raises:
        ValidationError: missing file, not JSON, or not LongMemEval-shaped.
    """
    raw = read_json_list(path, "LongMemEval", "records")
    try:
        return [_record(r) for r in raw]
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValidationError(f"{Path(path)}: malformed record ({exc!r})") from exc


def _record(rec: Mapping[str, Any]) -> Conversation:
    turns: list[Turn] = []
    marked: list[str] = []
    answer_sessions = set(rec["answer_session_ids"])
    dates = list(rec.get("haystack_dates", []))
    for s, (sid, session) in enumerate(zip(rec["haystack_session_ids"],
                                           rec["haystack_sessions"], strict=True)):
        for i, msg in enumerate(session):
            tid = f"{sid}:{i}"
            turns.append(Turn(tid, str(msg["role"]), f"{msg['role']}: {msg['content']}", s + 1,
                              dates[s] if s < len(dates) else None))
            if msg.get("has_answer"):
                marked.append(tid)
    evidence = marked or [t.dia_id for t in turns if t.dia_id.rsplit(":", 1)[0]
                          in answer_sessions]
    q = Question(str(rec["question"]), str(rec.get("answer", "")), 4, tuple(evidence))
    return Conversation(str(rec["question_id"]), tuple(turns), (q,) if evidence else (),
                        0 if evidence else 1)
