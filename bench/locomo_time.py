"""The time knob out of fold, and what it costs: `python -m bench.locomo_time RUN.json`, in-process against the
stack that ran the LoCoMo run (its memories are still there: ENGRAMLOG_DATA_DIR names the stack's data dir).

ENGRAMLOG_W_TIME only changes the answer to a question whose text names a span of time (domain/temporal.py, read
against the conversation's latest session date, as `eval locomo` does), so only those are asked again, once per
value of the grid, through recall.service.search (read-only: no hit-log, nothing written); every other question
keeps the run's answer. For each fold (bench/locomo_folds.py: a pair held out) the weight is chosen on the other six
(best MRR@10 over their questions) and the held-out pair is scored with it: figures per fold, mean ± spread, beside
W_TIME = 0 (no time signal) and the default, both replayed the same way. Latency: every pass is timed (p50/p95 of
the in-process funnel, no HTTP): W_TIME = 0 against the default is the time signal's cost.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from bench.common import percentile
from bench.locomo_folds import FIGURES, figures, folds
from bench.locomo_knobs import Answers, ask_all, with_answers

GRID = (0.0, 0.15, 0.3, 0.6)  # each value one pass over the time-naming questions


def _ask_all(run: dict[str, Any], data: Path, weight: float, timings: list[float]) -> Answers:
    """The dia_ids each time-naming question gets with W_TIME = weight (empty: abstained)."""
    from domain.temporal import resolve
    from infra.settings import get_settings, replace

    return ask_all(run, data, timings, replace(get_settings(), composite_w_time=weight),
                   only=lambda q, now: resolve(q.question, now) is not None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="the run's per-question dump (bench/results/runs/locomo-*.json)")
    parser.add_argument("--data", type=Path, default=Path("../shared/eval/locomo/locomo_dev.json"))
    parser.add_argument("--output", type=Path, help="write the figures as JSON")
    args = parser.parse_args()
    run = json.loads(args.run.read_text())
    questions = run["questions"]
    from infra.settings import get_settings

    default = get_settings().funnel.composite_w_time
    # Latency: each pass timed; W_TIME 0 against the default (the same questions, the same process, one after
    # the other: a machine's load in between shows as a difference).
    grid = sorted({*GRID, default})
    lat: dict[float, list[float]] = {w: [] for w in grid}
    by_weight = {w: _ask_all(run, args.data, w, lat[w]) for w in grid}
    timed_keys = set(by_weight[grid[0]])
    n_timed = {c: sum(1 for s, _ in timed_keys if s == c) for c in run["conversations"]}

    report: dict[str, Any] = {"run_id": run["run_id"], "grid": grid, "default": default,
                              "time_questions": len(timed_keys), "time_questions_per_conversation": n_timed,
                              "folds": []}
    for held in folds(run["conversations"]):
        train = [q for q in questions if q["sample_id"] not in held]
        test = [q for q in questions if q["sample_id"] in held]
        best = max(grid, key=lambda w: (figures(with_answers(train, by_weight[w]))["mrr@10"] or 0.0, -abs(w - default)))
        report["folds"].append({"held_out": list(held), "chosen_w_time": best,
                                "tuned": figures(with_answers(test, by_weight[best])),
                                "w_time_0": figures(with_answers(test, by_weight[0.0])),
                                "default": figures(with_answers(test, by_weight[default]))})
    for kind in ("tuned", "w_time_0", "default"):
        report[kind] = {name: {"mean": statistics.fmean(v), "spread": max(v) - min(v)} for name in FIGURES
                        if (v := [x for f in report["folds"] if (x := f[kind][name]) is not None])}
    report["full_split"] = {f"w_time={w:g}": figures(with_answers(questions, by_weight[w])) for w in grid}
    only = [q for q in questions if (q["sample_id"], q["qa_index"]) in timed_keys]
    report["time_questions_only"] = {f"w_time={w:g}": figures(with_answers(only, by_weight[w])) for w in grid}
    report["latency_ms"] = {f"w_time={w:g}": {"n": len(v), "p50": round(percentile(v, 50), 2),
                                             "p95": round(percentile(v, 95), 2)} for w, v in lat.items()}
    report["latency_ms"]["pass_order"] = [f"w_time={w:g}" for w in grid]
    for kind in ("w_time_0", "default", "tuned"):
        print(f"out of fold, {kind:<9}: " + "  ".join(
            f"{n} {report[kind][n]['mean']:.3f}±{report[kind][n]['spread']:.3f}" for n in
            ("r@1", "r@10", "mrr@10", "temporal r@1", "temporal r@10") if n in report[kind]))
    print("chosen per fold:", [f["chosen_w_time"] for f in report["folds"]])
    for w in grid:
        fig = report["time_questions_only"][f"w_time={w:g}"]
        print(f"time-naming questions only ({len(timed_keys)}), w_time={w:g}: r@1 {fig['r@1']:.3f} "
              f"r@10 {fig['r@10']:.3f} mrr@10 {fig['mrr@10']:.3f}")
    print("latency (in-process funnel):", report["latency_ms"])
    if args.output:
        args.output.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
