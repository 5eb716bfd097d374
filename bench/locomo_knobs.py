"""Any funnel knob out of fold: `python -m bench.locomo_knobs RUN.json --knob ENGRAMLOG_ENTITY_WEIGHT=0,0.1,0.2`,
in-process against the stack that ran the LoCoMo run (ENGRAMLOG_DATA_DIR names its data dir; its memories are
still there).

Every question of the run is asked again once per value of each knob's grid (the default is always in it, so
the baseline is replayed the same way, after the same hit-logs), through recall.service.search: read-only, no
hit-log, nothing written, each question's time words read against its conversation's latest session date as
`eval locomo` does. A knob is set by its environment variable, so the grid names what users set. Knobs are
swept one at a time, the others at their defaults.

For each fold (bench/locomo_folds.py: a pair of conversations held out) a knob's value is chosen on the other
six: the best MRR@10 among the values that abstain wrongly on at most 5% of answerable questions and on no fewer
adversarial ones than the default (ties: nearest the default); the held-out pair is scored with it. With
`--objective abstention` (a knob of the abstention gate, judged by issue 15's target) the value that abstains on
the most adversarial questions among those with at most 5% wrongly abstained and MRR@10 no lower than the
default's. Reported: per knob, the value chosen per fold and the held-out figures (mean ± spread) beside the
default's, each value's held-out figures per fold (JSON), and each value's full-split figures and in-process
funnel p50/p95.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.common import percentile
from bench.locomo_data import SCORED_CATEGORIES, Question, load_conversations
from bench.locomo_folds import FIGURES, WRONGLY_ABSTAINED_MAX, figures, folds
from bench.locomo_metrics import score_question
from infra.settings import Settings

DEFAULT_TENANT = "default"  # the tenant of a stack without API keys (api/context.py)
Answers = dict[tuple[str, int], list[str]]


@contextmanager
def knob(env: str, value: str | None) -> Iterator[None]:
    """The environment with `env` set to `value` (None: as it is), restored after."""
    before = os.environ.get(env)
    if value is not None:
        os.environ[env] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(env, None)
        else:
            os.environ[env] = before


def ask_all(run: dict[str, Any], data: Path, timings: list[float], settings: Settings | None = None,
            only: Callable[[Question, datetime], bool] | None = None) -> Answers:
    """The dia_ids each question of the run gets (empty: abstained) with `settings` (default: those the
    environment holds now, not the cached ones); `only`: the questions to ask, given their conversation's clock."""
    from infra.db import get_engine
    from infra.embedding import get_embedder
    from recall.scope import Scope
    from recall.service import RecallRequest, search

    settings = settings or Settings()
    engine, embedder = get_engine(), get_embedder(settings.embedding.embedding_model)
    out: Answers = {}
    for conv in load_conversations(data, run["conversations"]):
        now = max(t["occurred_at"] for t in conv.turns)
        scope = Scope(DEFAULT_TENANT, f"locomo-{run['run_id']}-{conv.sample_id}")
        for q in conv.questions:
            if (q.category in SCORED_CATEGORIES and not q.evidence) or (only is not None and not only(q, now)):
                continue
            started = time.perf_counter()
            found = search(engine, embedder, settings, RecallRequest(scope, q.question, run["k"],
                                                                      reference_time=now))
            timings.append((time.perf_counter() - started) * 1000)
            out[(conv.sample_id, q.index)] = [str(r.metadata.get("dia_id")) for r in found.results]
    return out


def with_answers(questions: Sequence[dict[str, Any]], answers: Answers) -> list[dict[str, Any]]:
    """The run's records with the replayed answers put in (and scored)."""
    out = []
    for q in questions:
        key = (q["sample_id"], q["qa_index"])
        if key in answers:
            q = {**q, "returned": answers[key], "scores_returned": [1.0] * len(answers[key])}
            if "scores" in q:
                q["scores"] = score_question(q["returned"], q["evidence"])
        out.append(q)
    return out


def choose(train: Sequence[dict[str, Any]], by_value: dict[str, Answers], default: str,
           objective: str = "mrr") -> str:
    """The value with the best MRR@10 on `train` that keeps the abstention where the default has it; with
    objective "abstention" (issue 15's target: adversarial questions abstained, answerable ones not), the value
    that abstains on the most adversarial questions among those that keep answerable ones wrongly abstained at
    most 5% and MRR@10 no lower than the default's (ties: the better MRR, then the default)."""
    base = figures(with_answers(train, by_value[default]))

    def key(value: str) -> tuple[Any, ...]:
        fig = figures(with_answers(train, by_value[value]))
        wrong, caught = fig["answerable wrongly abstained"] or 0.0, fig["cat-5 abstained"] or 0.0
        mrr = round(fig["mrr@10"] or 0.0, 4)
        few_wrong = wrong <= max(WRONGLY_ABSTAINED_MAX, base["answerable wrongly abstained"] or 0.0)
        if objective == "abstention":
            return (few_wrong and mrr >= round(base["mrr@10"] or 0.0, 4), round(caught, 4), mrr, value == default)
        return (few_wrong and caught >= (base["cat-5 abstained"] or 0.0), mrr, value == default)

    return max(by_value, key=key)


def sweep(run: dict[str, Any], data: Path, env: str, values: list[str],
          baseline: tuple[Answers, dict[str, float]], objective: str = "mrr") -> dict[str, Any]:
    """One knob: every value's answers (the default's are `baseline`, asked once for every knob), then the
    out-of-fold choice and figures."""
    default = os.environ.get(env)
    grid = ["default", *values]
    by_value: dict[str, Answers] = {"default": baseline[0]}
    latency: dict[str, dict[str, float]] = {"default": baseline[1]}
    for value in values:
        timings: list[float] = []
        with knob(env, None if value == "default" else value):
            by_value[value] = ask_all(run, data, timings)
        latency[value] = {"p50": round(percentile(timings, 50), 2), "p95": round(percentile(timings, 95), 2)}
        print(f"  {env}={value}: asked {len(timings)} in {sum(timings) / 1000:.0f} s", flush=True)
    questions = run["questions"]
    report: dict[str, Any] = {"knob": env, "default_value": default, "grid": grid, "objective": objective,
                              "folds": [], "latency_ms": latency,
                              "full_split": {v: figures(with_answers(questions, a)) for v, a in by_value.items()}}
    for held in folds(run["conversations"]):
        train = [q for q in questions if q["sample_id"] not in held]
        test = [q for q in questions if q["sample_id"] in held]
        best = choose(train, by_value, "default", objective)
        report["folds"].append({"held_out": list(held), "chosen": best,
                                "tuned": figures(with_answers(test, by_value[best])),
                                "default": figures(with_answers(test, by_value["default"])),
                                "each": {v: figures(with_answers(test, a)) for v, a in by_value.items()}})
    for kind in ("tuned", "default"):
        report[kind] = {name: {"mean": statistics.fmean(v), "spread": max(v) - min(v)} for name in FIGURES
                        if (v := [x for f in report["folds"] if (x := f[kind][name]) is not None])}
    return report


def lines(report: dict[str, Any]) -> list[str]:
    names = ("r@1", "r@10", "mrr@10", "cat-5 abstained", "answerable wrongly abstained")
    out = [f"{report['knob']} (default {report['default_value'] or 'unset'}), chosen per fold by "
           f"{report.get('objective', 'mrr')}: "
           + ", ".join(f["chosen"] for f in report["folds"])]
    for kind in ("default", "tuned"):
        out.append(f"  out of fold, {kind:<7}: " + "  ".join(
            f"{n} {report[kind][n]['mean']:.3f}±{report[kind][n]['spread']:.3f}" for n in names if n in report[kind]))
    for value, fig in report["full_split"].items():
        lat = report["latency_ms"][value]
        out.append(f"  full split {value:>8}: " + "  ".join(f"{n} {fig[n]:.3f}" for n in names if fig[n] is not None)
                   + f"  p50/p95 {lat['p50']}/{lat['p95']} ms")
    return out


def _parse(spec: str) -> tuple[str, list[str]]:
    env, sep, values = spec.partition("=")
    if not sep or not env.startswith("ENGRAMLOG_") or not values:
        raise argparse.ArgumentTypeError(f"{spec!r} is not ENGRAMLOG_NAME=v1,v2,...")
    return env, [v.strip() for v in values.split(",") if v.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="the run's per-question dump (bench/results/runs/locomo-*.json)")
    parser.add_argument("--knob", type=_parse, action="append", required=True, help="ENGRAMLOG_NAME=v1,v2,...")
    parser.add_argument("--data", type=Path, default=Path("../shared/eval/locomo/locomo_dev.json"))
    parser.add_argument("--output", type=Path, help="write the reports as JSON")
    parser.add_argument("--objective", choices=("mrr", "abstention"), default="mrr",
                        help="what a fold's value is chosen for on the six (choose())")
    args = parser.parse_args()
    run = json.loads(args.run.read_text())
    timings: list[float] = []
    answers = ask_all(run, args.data, timings)
    baseline = answers, {"p50": round(percentile(timings, 50), 2), "p95": round(percentile(timings, 95), 2)}
    print(f"  defaults: asked {len(timings)} in {sum(timings) / 1000:.0f} s", flush=True)
    reports = []
    for env, values in args.knob:
        reports.append(sweep(run, args.data, env, values, baseline, args.objective))
        print("\n".join(lines(reports[-1])), flush=True)
        if args.output:
            args.output.write_text(json.dumps({"run_id": run["run_id"], "knobs": reports}, indent=1))


if __name__ == "__main__":
    main()
