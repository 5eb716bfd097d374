"""Split saved LoCoMo reports into their committed summary and their git-ignored per-question dump.

    python -m bench.split_results            # every bench/results/*.json that still holds a per-question list

For each such report: bench/results/<name>-summary.json (every figure, no per-question list, `questions_file`
naming the dump) and bench/results/runs/<name>.json (the whole report, moved there); the report itself is removed
from bench/results/. New runs are saved this way by bench/locomo.py (save_report).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bench.common import RESULTS_DIR
from bench.locomo import RUNS_DIR, summary_of


def split(path: Path) -> tuple[Path, Path] | None:
    report = json.loads(path.read_text())
    if not isinstance(report, dict) or not isinstance(report.get("questions"), list):
        return None
    dump = RUNS_DIR / path.name
    summary = path.with_name(f"{path.stem}-summary.json")
    summary.write_text(json.dumps(summary_of(report, dump), indent=1, default=str))
    dump.parent.mkdir(parents=True, exist_ok=True)
    path.replace(dump)
    return summary, dump


def main() -> int:
    for path in sorted(RESULTS_DIR.glob("*.json")):
        done = split(path)
        if done:
            print(f"{path.name}: summary {done[0].name}, dump {done[1].relative_to(RESULTS_DIR)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
