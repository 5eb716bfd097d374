"""bench/results/ keeps the summaries; each run's per-question dump goes to the git-ignored bench/results/runs/."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _report() -> dict:
    return {"overall": {"r@10": 0.61}, "run_id": "20261201T000000-abc", "questions": [{"q": i} for i in range(3)]}


def test_a_run_saves_a_small_summary_and_its_dump_under_runs(tmp_path, monkeypatch) -> None:
    import bench.locomo

    monkeypatch.setattr(bench.locomo, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(bench.locomo, "RUNS_DIR", tmp_path / "runs")
    summary, dump = bench.locomo.save_report(_report(), tmp_path / "locomo-20261201-summary.json")
    assert dump == tmp_path / "runs" / "locomo-20261201.json"
    assert json.loads(dump.read_text()) == _report()
    saved = json.loads(summary.read_text())
    assert saved == {"overall": {"r@10": 0.61}, "run_id": "20261201T000000-abc", "questions": 3,
                     "questions_file": "runs/locomo-20261201.json"}


def test_an_old_report_is_split_into_summary_and_dump(tmp_path, monkeypatch) -> None:
    import bench.locomo
    import bench.split_results

    monkeypatch.setattr(bench.locomo, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(bench.split_results, "RUNS_DIR", tmp_path / "runs")
    old = tmp_path / "locomo-old.json"
    old.write_text(json.dumps(_report()))
    summary, dump = bench.split_results.split(old)  # type: ignore[misc]
    assert not old.exists() and json.loads(dump.read_text()) == _report()
    assert json.loads(summary.read_text())["questions"] == 3
    assert bench.split_results.split(summary) is None  # a summary has no per-question list


def test_runs_are_ignored_and_no_committed_result_holds_a_question_list() -> None:
    ignored = subprocess.run(["git", "check-ignore", "-q", "bench/results/runs/locomo-x.json"], cwd=ROOT)
    assert ignored.returncode == 0
    tracked = subprocess.run(["git", "ls-files", "bench/results"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    large = [p for p in tracked if p.endswith(".json") and (ROOT / p).exists() and isinstance(
        json.loads((ROOT / p).read_text()).get("questions"), list)]
    assert large == []
