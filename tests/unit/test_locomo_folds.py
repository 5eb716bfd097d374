"""bench/locomo_folds.py: folds, the gate's replay on recorded channel values, floors chosen on six held out on two."""

from __future__ import annotations

from typing import Any

from bench.locomo_folds import choose, folds, out_of_fold, replay, verdict
from bench.locomo_metrics import score_question


def question(sample: str, category: int, cosine: float, evidence: tuple[str, ...] = ("D1:1",)) -> dict[str, Any]:
    """A recorded question whose gate saw one vector channel (best cosine) and a keyword channel (always yes)."""
    ranked = ["D1:1", "D1:2"]
    gate = {"values": {"vector": cosine, "keyword": 1.0}, "channels": {"vector": cosine >= 0.3, "keyword": True},
            "quorum": 1.0, "veto": [], "ranked": ranked}
    q: dict[str, Any] = {"sample_id": sample, "category": category, "evidence": list(evidence), "gate": gate,
                         "returned": ranked if cosine >= 0.3 else [], "scores_returned": []}
    if category != 5:
        q["scores"] = score_question(q["returned"], list(evidence))
    return q


def test_folds_are_consecutive_pairs_in_the_data_order() -> None:
    assert folds(["a", "b", "c", "d", "e", "f", "g", "h"]) == [("a", "b"), ("c", "d"), ("e", "f"), ("g", "h")]


def test_verdict_replays_a_floor_on_the_recorded_value_and_keeps_the_other_votes() -> None:
    gate = question("a", 5, 0.4)["gate"]
    assert verdict(gate, {"vector": 0.3}) is False
    assert verdict(gate, {"vector": 0.5}) is True  # quorum 1: one channel against abstains
    assert verdict({**gate, "quorum": 0.5}, {"vector": 0.5}) is False  # one of two is the quorum
    assert verdict({**gate, "quorum": 0.5, "veto": ["vector"]}, {"vector": 0.5}) is True
    assert verdict({"values": {}, "channels": {}, "ranked": []}, {"vector": 0.0}) is True  # no candidate at all


def test_replay_rescores_what_the_gate_would_have_returned() -> None:
    q = question("a", 1, 0.35)
    [kept] = replay([q], {"vector": 0.3})
    [dropped] = replay([q], {"vector": 0.4})
    assert kept["returned"] == ["D1:1", "D1:2"] and kept["scores"]["r@1"] == 1.0
    assert dropped["returned"] == [] and dropped["scores"]["r@10"] == 0.0


def test_choose_abstains_most_on_adversarial_within_the_wrongly_abstained_limit() -> None:
    # answerable questions have cosines from 0.36 up; adversarial ones under 0.35: a floor of 0.35 parts them
    answerable = [question("a", 1, 0.36 + 0.01 * i) for i in range(20)]
    adversarial = [question("a", 5, 0.25 + 0.004 * i) for i in range(20)]
    chosen = choose(answerable + adversarial, {"vector": 0.3, "keyword": 0.3})
    assert 0.34 <= chosen["vector"] <= 0.36


def test_out_of_fold_chooses_on_six_and_measures_on_the_held_out_two() -> None:
    samples = [f"c{i}" for i in range(8)]
    records = [q for s in samples for q in
               [question(s, 1, 0.5), question(s, 4, 0.45), question(s, 5, 0.33), question(s, 5, 0.6)]]
    report = out_of_fold(records, samples, {"vector": 0.3, "keyword": 0.3})
    assert [f["held_out"] for f in report["folds"]] == [["c0", "c1"], ["c2", "c3"], ["c4", "c5"], ["c6", "c7"]]
    assert all(f["questions"] == 8 for f in report["folds"])
    assert report["frozen"]["cat-5 abstained"]["mean"] == 0.0  # the run's own floor (0.3) abstains on none
    # chosen on the other six: a floor above 0.33 and at most 0.45 (answerable ones stay answered)
    assert all(0.33 < f["chosen"]["ENGRAMLOG_ABSTAIN_SIM_FLOOR"] <= 0.45 for f in report["folds"])
    assert report["tuned"]["cat-5 abstained"]["mean"] == 0.5
    assert report["tuned"]["answerable wrongly abstained"]["mean"] == 0.0
    assert report["tuned"]["r@10"]["spread"] == 0.0


def test_a_run_without_gate_records_reports_per_fold_figures_with_the_knobs_frozen() -> None:
    samples = ["c0", "c1", "c2", "c3"]
    records = [{k: v for k, v in question(s, 1, 0.5).items() if k != "gate"} for s in samples]
    report = out_of_fold(records, samples)
    assert "tuned" not in report and report["tuned_settings"] == [] and report["frozen"]["r@10"]["mean"] == 1.0
    assert report["frozen"]["r@10"]["stdev"] == 0.0 and len(report["folds"]) == 2
