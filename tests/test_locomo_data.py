"""The shared LoCoMo loader: turn text, dates, evidence cleaning, skipped questions, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mars_core.bench.locomo_data import Conversation, load_locomo
from mars_core.errors import ValidationError

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
LOCOMO = DATA / "locomo" / "locomo_dev7.json"


def _write(tmp_path: Path, raw: Any) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return path


def _record() -> dict[str, Any]:
    return {
        "sample_id": "s1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_2_date_time": "2 pm on 9 May, 2023",
            "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "Back again"}],
            "session_1_date_time": "1 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi"},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "See", "blip_caption": "a cat"},
            ],
            "session_3_date_time": "3 pm on 10 May, 2023",  # no session_3: ignored
        },
        "qa": [
            {"question": "q1", "answer": "a1", "category": 4, "evidence": ["D1:2; D2:1"]},
            {"question": "q2", "answer": 7, "category": 2, "evidence": ["D1:1 D1:2", "D1:1"]},
            {"question": "q3", "answer": "a3", "category": 1, "evidence": ["D:11:26", "D"]},
            {"question": "q4", "adversarial_answer": "no", "category": 5, "evidence": ["D9:1"]},
            {"question": "q5", "adversarial_answer": "adv", "category": 5, "evidence": ["D2:1"]},
        ],
    }


def test_turns_are_in_session_order_with_speaker_caption_and_date(tmp_path: Path) -> None:
    (conv,) = load_locomo(_write(tmp_path, [_record()]))
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D2:1"]
    assert conv.turns[0].text == "Ann: Hi"
    assert conv.turns[1].text == "Bo: See [shares a photo: a cat]"
    assert [t.session for t in conv.turns] == [1, 1, 2]
    assert conv.turns[2].date == "2 pm on 9 May, 2023"
    assert conv.turns[2].speaker == "Bo"


def test_evidence_is_split_deduplicated_and_unknown_ids_dropped(tmp_path: Path) -> None:
    (conv,) = load_locomo(_write(tmp_path, [_record()]))
    by_q = {q.question: q for q in conv.questions}
    assert by_q["q1"].evidence == ("D1:2", "D2:1")
    assert by_q["q2"].evidence == ("D1:1", "D1:2")
    assert by_q["q2"].answer == "7"
    assert by_q["q5"].answer == "adv" and by_q["q5"].category == 5
    assert set(by_q) == {"q1", "q2", "q5"}
    assert conv.skipped_questions == 2


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        ({"not": "a list"}, "list of conversations"),
        ([{"qa": []}], "conversation"),
        ([{"conversation": {"session_1": [{"speaker": "A"}]}, "qa": []}], "speaker, dia_id"),
        ([{"conversation": {}, "qa": [{"question": "q", "category": "x", "evidence": []}]}], None),
        ([{"conversation": {}, "qa": "nope"}], "'qa' must be a list"),
    ],
)
def test_malformed_files_raise_a_typed_error(tmp_path: Path, raw: Any, match: str | None) -> None:
    path = _write(tmp_path, raw)
    if match is None:  # no valid evidence: skipped before the category is checked
        assert load_locomo(path)[0].skipped_questions == 1
        return
    with pytest.raises(ValidationError, match=match):
        load_locomo(path)


def test_missing_and_non_json_files_raise_validation_error(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="not found"):
        load_locomo(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValidationError, match="cannot read"):
        load_locomo(bad)


@pytest.mark.data
def test_real_locomo_dev7_matches_the_documented_counts() -> None:
    if not LOCOMO.exists():
        pytest.skip(f"LoCoMo data not found at {LOCOMO} (../shared/data is absent)")
    convs = load_locomo(LOCOMO)
    assert len(convs) == 7
    assert all(isinstance(c, Conversation) for c in convs)
    assert sum(len(c.turns) for c in convs) == 4124
    total = sum(len(c.questions) + c.skipped_questions for c in convs)
    assert total == 1347
    assert sum(c.skipped_questions for c in convs) >= 1
    assert sum("[shares a photo:" in t.text for c in convs for t in c.turns) == 867
    known = {t.dia_id for c in convs for t in c.turns}
    assert all(e in known for c in convs for q in c.questions for e in q.evidence)
    assert all(t.date is not None for c in convs for t in c.turns)
