"""The LoCoMo evaluation's pure parts: evidence normalisation, dates, and the ranking metrics on toy examples."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import pytest

from bench.locomo import (
    aggregate,
    hit_at,
    load_conversations,
    mrr_at,
    ndcg_at,
    normalise_evidence,
    parse_session_date,
    percentile,
    recall_at,
    score_question,
    summarise,
    turn_content,
)

KNOWN = frozenset({"D1:1", "D1:2", "D8:6", "D9:17", "D11:26", "D30:5"})


def test_normalise_evidence_splits_fixes_and_drops() -> None:
    assert normalise_evidence(["D8:6; D9:17"], KNOWN) == ["D8:6", "D9:17"]
    assert normalise_evidence(["D:11:26"], KNOWN) == ["D11:26"]
    assert normalise_evidence(["D30:05"], KNOWN) == ["D30:5"]
    # 'D' is no id, D99:1 is not in the conversation, repeats collapse, order is kept
    assert normalise_evidence(["D1:2", "D", "D99:1", "D1:1", "D1:02"], KNOWN) == ["D1:2", "D1:1"]
    assert normalise_evidence([], KNOWN) == []


def test_session_date_and_content() -> None:
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_date("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)
    assert turn_content({"speaker": "Caroline", "text": "Hi!", "blip_caption": "a dog"}) == "Caroline: Hi!"


def test_metrics_on_a_toy_ranking() -> None:
    ranked = ["a", "x", "b", "y", "z", "c"]
    relevant = ["b", "c", "d"]
    assert recall_at(ranked, relevant, 1) == 0.0
    assert recall_at(ranked, relevant, 5) == pytest.approx(1 / 3)
    assert recall_at(ranked, relevant, 10) == pytest.approx(2 / 3)
    assert hit_at(ranked, relevant, 1) == 0.0
    assert hit_at(ranked, relevant, 5) == 1.0
    assert mrr_at(ranked, relevant, 10) == pytest.approx(1 / 3)
    dcg = 1 / math.log2(4) + 1 / math.log2(7)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at(ranked, relevant, 10) == pytest.approx(dcg / ideal)


def test_metrics_edge_cases() -> None:
    assert ndcg_at(["a", "b"], ["a", "b"], 10) == pytest.approx(1.0)
    assert ndcg_at(["a"], ["a"], 10) == 1.0
    assert mrr_at([], ["a"]) == 0.0 and recall_at([], ["a"], 10) == 0.0 and hit_at([], ["a"], 10) == 0.0
    # a repeated id counts once and does not push others out of the top k
    assert recall_at(["a", "a", "b"], ["a", "b"], 2) == 1.0
    # relevant beyond the cutoff counts for nothing
    assert mrr_at(["x"] * 0 + [str(i) for i in range(10)] + ["a"], ["a"], 10) == 0.0


def test_score_aggregate_and_summary() -> None:
    s1 = score_question(["a"], ["a"])
    s2 = score_question(["x"], ["a"])
    assert s1["r@1"] == 1.0 and s1["ndcg@10"] == 1.0 and s2["hit@10"] == 0.0
    agg = aggregate([s1, s2])
    assert agg["n"] == 2 and agg["r@1"] == 0.5 and agg["mrr@10"] == 0.5
    per_question = [
        {"category": 1, "returned": ["a"], "scores_returned": [0.9], "scores": s1},
        {"category": 4, "returned": ["x"], "scores_returned": [0.4], "scores": s2},
        {"category": 5, "returned": [], "scores_returned": []},
        {"category": 5, "returned": ["y"], "scores_returned": [0.3]},
    ]
    summary = summarise(per_question)
    assert summary["overall"]["n"] == 2
    assert set(summary["by_category"]) == {"1", "4"}
    assert summary["category_5"]["abstained"] == 1 and summary["category_5"]["abstain_rate"] == 0.5


def test_percentile_interpolates() -> None:
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([5], 95) == 5
    assert percentile(list(range(101)), 95) == 95


def test_load_conversations_on_a_tiny_file(tmp_path) -> None:
    sample = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "A", "speaker_b": "B",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hello"},
                          {"speaker": "B", "dia_id": "D1:2", "text": "hi", "blip_caption": "a cat"}],
            "session_2_date_time": "9:00 am on 9 May, 2023",  # a date without its session is ignored
        },
        "qa": [
            {"question": "q1", "answer": "x", "evidence": ["D1:02", "D"], "category": 4},
            {"question": "q2", "answer": "x", "evidence": [], "category": 3},
            {"question": "q3", "adversarial_answer": "x", "evidence": ["D1:1"], "category": 5},
        ],
    }
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([sample]))
    [conv] = load_conversations(path)
    assert [t["content"] for t in conv.turns] == ["A: hello", "B: hi"]
    assert conv.turns[0]["occurred_at"] == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert [q.evidence for q in conv.questions] == [("D1:2",), (), ("D1:1",)]
    with pytest.raises(ValueError):
        load_conversations(path, ["conv-y"])
