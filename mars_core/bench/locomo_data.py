"""LoCoMo loader: conversations as turns with dia_ids, questions with valid evidence ids.

The file is never vendored: callers pass its path (``../shared/data/locomo/locomo_dev7.json``
on the development machines). Loader choices follow DESIGN §5:

* a turn's text is ``"speaker: text"``, plus ``" [shares a photo: <blip_caption>]"`` when the
  turn carries a caption;
* session date keys without a session are ignored;
* evidence ids are split on ``;`` and whitespace, and ids that name no turn are dropped;
  questions left with no valid evidence id are skipped and counted.

Examples:
    >>> import json, tempfile, os
    >>> raw = [{"sample_id": "c0", "conversation": {
    ...     "speaker_a": "Ann", "speaker_b": "Bo",
    ...     "session_1_date_time": "1:56 pm on 8 May, 2023",
    ...     "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bo"},
    ...                   {"speaker": "Bo", "dia_id": "D1:2", "text": "Look",
    ...                    "blip_caption": "a dog"}]},
    ...     "qa": [{"question": "Who has a dog?", "answer": "Bo", "category": 4,
    ...             "evidence": ["D1:2; D9:9"]},
    ...            {"question": "?", "answer": "x", "category": 1, "evidence": ["D"]}]}]
    >>> path = os.path.join(tempfile.mkdtemp(), "locomo.json")
    >>> with open(path, "w") as fh:
    ...     json.dump(raw, fh)
    >>> conv = load_locomo(path)[0]
    >>> conv.turns[1].text
    'Bo: Look [shares a photo: a dog]'
    >>> conv.questions[0].evidence, conv.skipped_questions
    (('D1:2',), 1)
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mars_core.errors import ValidationError

__all__ = ["Conversation", "Question", "Turn", "load_locomo", "read_json_list"]

_SESSION = re.compile(r"session_(\d+)")
_DIA = re.compile(r"D\d+:\d+")


@dataclass(frozen=True)
class Turn:
    """One dialogue turn.

    Attributes:
        dia_id: The LoCoMo dialogue id, e.g. ``"D1:3"``.
        speaker: Who spoke.
        text: ``"speaker: text"`` plus ``" [shares a photo: <caption>]"`` when present.
        session: The session number (1-based).
        date: The session's date-time string, or ``None`` when the file gives none.
    """

    dia_id: str
    speaker: str
    text: str
    session: int
    date: str | None


@dataclass(frozen=True)
class Question:
    """One QA item with its gold evidence.

    Attributes:
        question: The question text.
        answer: The gold answer (adversarial items use their ``adversarial_answer``).
        category: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial.
        evidence: Valid dia_ids of the evidence turns, in file order, without duplicates.
    """

    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    """One LoCoMo conversation.

    Attributes:
        sample_id: The conversation id from the file.
        turns: All turns in session order.
        questions: The questions that have at least one valid evidence id.
        skipped_questions: How many questions were skipped for lack of a valid evidence id.
    """

    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    skipped_questions: int


def load_locomo(path: str | os.PathLike[str]) -> list[Conversation]:
    """Load a LoCoMo JSON file.

    Args:
        path: The JSON file (a list of conversation records).

    Returns:
        The conversations, in file order.

    Raises:
        ValidationError: The file is missing, is not JSON, or is not LoCoMo-shaped.
    """
    return [_conversation(rec, i)
            for i, rec in enumerate(read_json_list(path, "LoCoMo", "conversations"))]


def read_json_list(path: str | os.PathLike[str], dataset: str, items: str) -> list[Any]:
    """The JSON list in ``path`` (a benchmark data file), or a ``ValidationError`` naming
    ``dataset`` and how to pass the file."""
    p = Path(path)
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ValidationError(f"{dataset} file not found: {p}; pass --data PATH") from exc
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValidationError(f"cannot read {dataset} file {p}: {exc}") from exc
    if not isinstance(raw, list):
        raise ValidationError(f"{p}: expected a JSON list of {items}")
    return raw


def _conversation(rec: Any, index: int) -> Conversation:
    if not isinstance(rec, Mapping) or not isinstance(rec.get("conversation"), Mapping):
        raise ValidationError(f"record {index}: expected an object with a 'conversation'")
    turns = _turns(rec["conversation"], index)
    known = {t.dia_id for t in turns}
    qa = rec.get("qa", [])
    if not isinstance(qa, list):
        raise ValidationError(f"record {index}: 'qa' must be a list")
    questions = [q for q in (_question(item, known, index) for item in qa) if q is not None]
    sample_id = str(rec.get("sample_id", f"conv-{index}"))
    return Conversation(sample_id, tuple(turns), tuple(questions), len(qa) - len(questions))


def _turns(conv: Mapping[str, Any], index: int) -> list[Turn]:
    sessions = sorted(
        (int(m.group(1)), key)
        for key in conv
        if (m := _SESSION.fullmatch(key)) is not None
    )
    turns: list[Turn] = []
    for number, key in sessions:
        items = conv[key]
        if not isinstance(items, list):
            raise ValidationError(f"record {index}: {key} must be a list of turns")
        date = conv.get(f"{key}_date_time")
        for item in items:
            turns.append(_turn(item, number, date if isinstance(date, str) else None, index))
    return turns


def _turn(item: Any, session: int, date: str | None, index: int) -> Turn:
    if not isinstance(item, Mapping) or not all(
        isinstance(item.get(k), str) for k in ("speaker", "dia_id", "text")
    ):
        raise ValidationError(f"record {index}: a turn needs string speaker, dia_id and text")
    text = f"{item['speaker']}: {item['text']}"
    caption = item.get("blip_caption")
    if isinstance(caption, str) and caption:
        text += f" [shares a photo: {caption}]"
    return Turn(item["dia_id"], item["speaker"], text, session, date)


def _question(item: Any, known: set[str], index: int) -> Question | None:
    if not isinstance(item, Mapping) or not isinstance(item.get("question"), str):
        raise ValidationError(f"record {index}: a QA item needs a string 'question'")
    evidence = _evidence(item.get("evidence", []), known)
    if not evidence:
        return None
    answer = item.get("answer", item.get("adversarial_answer", ""))
    category = item.get("category")
    if not isinstance(category, int) or isinstance(category, bool):
        raise ValidationError(f"record {index}: category must be an integer")
    return Question(item["question"], str(answer), category, evidence)


def _evidence(raw: Any, known: set[str]) -> tuple[str, ...]:
    parts: Sequence[Any] = raw if isinstance(raw, list) else [raw]
    ids: list[str] = []
    for part in parts:
        for token in re.split(r"[;\s]+", str(part)):
            if _DIA.fullmatch(token) and token in known and token not in ids:
                ids.append(token)
    return tuple(ids)
