"""Out-of-fold LoCoMo figures (`engramlog eval locomo --folds`; `python -m bench.locomo_folds RUN.json` on a saved
run's per-question dump). Pure: it reads a run's per-question records, never the server.

Folds: the conversations in the data's order, cut into consecutive pairs (8 dev conversations → 4 folds); each fold
holds out one pair and "trains" on the other six.

The knobs, and what this module does with each:
- replayed, so chosen on the six and measured on the held-out two: the abstention gate's floors on its channels'
  recorded values (ENGRAMLOG_ABSTAIN_SIM_FLOOR on the best cosine, ENGRAMLOG_ABSTAIN_TERM_FLOOR on the share of
  query terms matched, ENGRAMLOG_ABSTAIN_RELEVANCE_FLOOR on the best calibrated relevance when the run has that
  channel). A run asked with `trace` records each question's gate channels (their values and votes) and the
  ranking the gate judged, so a floor can be replayed without asking again. The choice: the most adversarial
  questions abstained with answerable ones wrongly abstained ≤ 5% on the six (ties: fewer wrongly abstained, then
  the floors nearest the run's own). The replay keeps the run's staging fallback as it went (a floor that would
  have sent a question to staging, or brought it back, is not replayed).
- frozen (one value, set before the run, the same on every fold): the funnel's weights (ENGRAMLOG_WEIGHT_*,
  ENGRAMLOG_W_* incl. ENGRAMLOG_W_TIME and ENGRAMLOG_TIME_BOOST_DAYS), PRF, entity boost, graph walk, candidate
  floor, the gate's quorum, veto and entity share, the staging fallback floor. Their out-of-fold figure is the
  per-fold figure on each held-out pair: mean and spread.

Every figure is given per fold, as mean, spread (max − min) and standard deviation, beside the full-split figure.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.locomo_data import ABSTAIN_CATEGORY
from bench.locomo_metrics import score_question, summarise

FOLD_SIZE = 2
WRONGLY_ABSTAINED_MAX = 0.05  # the target the gate's floors are chosen under (issue 15 §4)
# The grid each replayed floor is chosen from (the run's own value is always tried too).
GRID: dict[str, list[float]] = {
    "vector": [round(0.20 + 0.025 * i, 3) for i in range(17)],  # best cosine 0.20 … 0.60
    "keyword": [round(0.1 * i, 1) for i in range(1, 9)],  # share of query terms 0.1 … 0.8
    "relevance": [0.0] + [round(0.05 * i, 2) for i in range(1, 15)],  # calibrated relevance 0 (off) … 0.7
}
SETTING = {"vector": "ENGRAMLOG_ABSTAIN_SIM_FLOOR", "keyword": "ENGRAMLOG_ABSTAIN_TERM_FLOOR",
           "relevance": "ENGRAMLOG_ABSTAIN_RELEVANCE_FLOOR"}
FIGURES: dict[str, Callable[[dict[str, Any]], float | None]] = {
    "r@1": lambda s: s["overall"].get("r@1"),
    "r@10": lambda s: s["overall"].get("r@10"),
    "mrr@10": lambda s: s["overall"].get("mrr@10"),
    "ndcg@10": lambda s: s["overall"].get("ndcg@10"),
    "temporal r@1": lambda s: s["by_category"].get("2", {}).get("r@1"),
    "temporal r@10": lambda s: s["by_category"].get("2", {}).get("r@10"),
    "cat-5 abstained": lambda s: s["category_5"]["abstain_rate"],
    "answerable wrongly abstained": lambda s: s["answerable_abstained"]["rate"],
}


def folds(sample_ids: Sequence[str], size: int = FOLD_SIZE) -> list[tuple[str, ...]]:
    """The held-out groups: consecutive `size` conversations in the data's order."""
    return [tuple(sample_ids[i:i + size]) for i in range(0, len(sample_ids), size)]


def figures(questions: Sequence[dict[str, Any]]) -> dict[str, float | None]:
    summary = summarise(questions)
    return {name: get(summary) for name, get in FIGURES.items()}


def replayable(questions: Sequence[dict[str, Any]]) -> bool:
    """Every question recorded its gate channels and the ranking the gate judged (a run with trace)."""
    return bool(questions) and all("gate" in q for q in questions)


def verdict(gate: dict[str, Any], floors: dict[str, float]) -> bool:
    """Would the gate abstain with these floors? The recorded votes of the channels not replayed stand."""
    values, votes = gate.get("values", {}), dict(gate.get("channels", {}))
    if not votes:  # no candidate at all: nothing to let through
        return True
    for name, floor in floors.items():
        if name not in values:
            continue
        if name == "relevance" and floor <= 0:
            votes.pop(name, None)  # a floor of 0 leaves the channel out
            continue
        votes[name] = values[name] >= floor
    if any(not votes[v] for v in gate.get("veto", []) if v in votes):
        return True
    return sum(votes.values()) / len(votes) < gate.get("quorum", 0.5)


def replay(questions: Sequence[dict[str, Any]], floors: dict[str, float]) -> list[dict[str, Any]]:
    """The questions as the gate with `floors` would have answered them."""
    out = []
    for q in questions:
        ranked = q["gate"]["ranked"]
        returned = [] if verdict(q["gate"], floors) else ranked
        record = {**q, "returned": returned, "scores_returned": q["gate"].get("scores", [])[:len(returned)]}
        if "scores" in q:
            record["scores"] = score_question(returned, q["evidence"])
        out.append(record)
    return out


def _grid(questions: Sequence[dict[str, Any]], own: dict[str, float]) -> list[dict[str, float]]:
    present = {n for q in questions for n in q["gate"].get("values", {})}
    names = [n for n in GRID if n in present]
    axes = [sorted(set(GRID[n]) | ({own[n]} if n in own else set())) for n in names]
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*axes)]


def choose(questions: Sequence[dict[str, Any]], own: dict[str, float]) -> dict[str, float]:
    """The floors that abstain on the most adversarial questions with ≤ 5% of answerable ones wrongly abstained."""
    adversarial = [q for q in questions if q["category"] == ABSTAIN_CATEGORY]
    answerable = [q for q in questions if "scores" in q]

    def key(floors: dict[str, float]) -> tuple[float, ...]:
        wrong = sum(verdict(q["gate"], floors) for q in answerable) / max(1, len(answerable))
        caught = sum(verdict(q["gate"], floors) for q in adversarial) / max(1, len(adversarial))
        distance = sum(abs(floors[n] - own.get(n, floors[n])) for n in floors)
        return (wrong <= WRONGLY_ABSTAINED_MAX, caught, -wrong, -distance)

    return max(_grid(questions, own), key=key)


def out_of_fold(questions: Sequence[dict[str, Any]], sample_ids: Sequence[str],
                own: dict[str, float] | None = None) -> dict[str, Any]:
    """Per fold: the held-out pair's figures with the knobs frozen, and (a traced run) with the gate's floors
    chosen on the other six; mean, spread and standard deviation of each; the full-split figures beside."""
    own = own or {}
    tune = replayable(questions)
    report: dict[str, Any] = {"folds": [], "full_split": figures(questions), "own_floors": own,
                              "tuned_settings": sorted(SETTING[n] for n in GRID) if tune else []}
    for held in folds(sample_ids):
        test = [q for q in questions if q["sample_id"] in held]
        fold: dict[str, Any] = {"held_out": list(held), "questions": len(test), "frozen": figures(test)}
        if tune:
            train = [q for q in questions if q["sample_id"] not in held]
            chosen = choose(train, own)
            fold["chosen"] = {SETTING[n]: v for n, v in chosen.items()}
            fold["tuned"] = figures(replay(test, chosen))
        report["folds"].append(fold)
    for kind in ("frozen", "tuned") if tune else ("frozen",):
        report[kind] = _spread([f[kind] for f in report["folds"]])
    if tune:
        report["full_split_own_floors_replayed"] = figures(replay(questions, own)) if own else None
    return report


def _spread(per_fold: Sequence[dict[str, float | None]]) -> dict[str, dict[str, float | None]]:
    out: dict[str, dict[str, float | None]] = {}
    for name in FIGURES:
        values = [v for f in per_fold if (v := f[name]) is not None]
        out[name] = {"mean": statistics.fmean(values) if values else None,
                     "spread": max(values) - min(values) if values else None,
                     "stdev": statistics.pstdev(values) if len(values) > 1 else None}
    return out


def lines(report: dict[str, Any]) -> list[str]:
    """The report as text: one row per figure, full split · frozen out of fold · tuned out of fold."""
    def f(x: float | None) -> str:
        return "  -  " if x is None else f"{x:.3f}"

    tuned = "tuned" in report
    head = f"{'figure':<30} {'full split':>10}   {'out of fold, knobs frozen':>26}"
    head += f"   {'out of fold, gate floors chosen on 6':>36}" if tuned else ""
    rows = [head]
    for name in FIGURES:
        row = f"{name:<30} {f(report['full_split'][name]):>10}   "
        fr = report["frozen"][name]
        row += f"{f(fr['mean']):>12} ± {f(fr['stdev'])} (spread {f(fr['spread'])})"
        if tuned:
            tu = report["tuned"][name]
            row += f"   {f(tu['mean']):>12} ± {f(tu['stdev'])} (spread {f(tu['spread'])})"
        rows.append(row)
    for fold in report["folds"]:
        chosen = ", ".join(f"{k}={v:g}" for k, v in fold.get("chosen", {}).items())
        rows.append(f"  held out {'+'.join(fold['held_out'])} ({fold['questions']} questions)"
                    + (f": chosen on the other six: {chosen}" if chosen else ""))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a run's per-question dump (bench/results/runs/locomo-*.json)")
    args = parser.parse_args()
    run = json.loads(args.run.read_text())
    report = out_of_fold(run["questions"], run["conversations"], run.get("gate_floors"))
    print("\n".join(lines(report)))


if __name__ == "__main__":
    main()
