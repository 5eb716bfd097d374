"""Fit the relevance scale (domain/relevance.py) of the configured embedding model on labelled pairs of our own.

The fixture (bench/relevance_fixtures.py: memories, a knowledge library with title-only sections, sessions,
transcripts, standard-library modules as a code index, questions meant for each domain and some nothing answers) is
loaded into one tenant (bench/labelled.py stack: embedded PostgreSQL and Redis, the API app in process, default
settings, the projectors caught up by hand) and every question asked through POST /v1/recall/multi twice (before and
after the lazy vectors, bench/labelled.py). Every result of every bucket is a labelled pair: its features (as the
domain reported them in its explanation) and whether it answers. Per domain, a logistic regression (Newton's method,
L2 on the weights, not on the bias: deterministic) gives the coefficients; a second fit without the cosine features
is the keyword-only scale used for a model the table does not know. A domain with fewer than MIN_POSITIVES answering
pairs gets the fit of all domains pooled.

Reported: pairs and positives per domain, the Brier score and log loss in sample and out of fold (two folds by
question), a reliability table (predicted vs observed by relevance band), and how many non-answering results reach
0.8. Written: recall/relevance_table.py (the model's entry replaced, other models kept),
bench/results/relevance-calibration-<stamp>.json (the summary) and bench/results/runs/ (with the labelled pairs, for
`--rows`).

    python -m bench.relevance_calibration [--no-write] [--rows RESULTS.json] [--output FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import pprint
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import RESULTS_DIR, machine, machine_line, save_result, stamp
from bench.labelled import DOMAINS, ask, labelled_rows, load, stack
from bench.relevance_fixtures import FIXTURE
from domain.relevance import FEATURES

L2 = 0.1  # light: the features separate well, a strong penalty only flattens the scale
MIN_POSITIVES = 5
VECTOR_COLUMNS = (FEATURES.index("cosine"), FEATURES.index("has_vector"))
TABLE_FILE = Path(__file__).resolve().parent.parent / "recall" / "relevance_table.py"
BANDS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0000001)


def vector(features: dict[str, float]) -> list[float]:
    return [1.0, *(float(features[name]) for name in FEATURES[1:])]


def fit(x: np.ndarray, y: np.ndarray, l2: float = L2) -> np.ndarray:
    """L2-regularised logistic regression by Newton's method (the bias unpenalised)."""
    w = np.zeros(x.shape[1])
    penalty = np.full(x.shape[1], l2)
    penalty[0] = 0.0
    for _ in range(200):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -60, 60)))
        gradient = x.T @ (p - y) + penalty * w
        hessian = x.T @ (x * (p * (1 - p))[:, None]) + np.diag(penalty) + 1e-9 * np.eye(x.shape[1])
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.max(np.abs(step))) < 1e-10:
            break
    return w


def predict(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x @ w, -60, 60)))


def keyword_only(x: np.ndarray) -> np.ndarray:
    out = x.copy()
    out[:, list(VECTOR_COLUMNS)] = 0.0
    return out


def scores(p: np.ndarray, y: np.ndarray) -> dict[str, float]:
    eps = 1e-9
    loss = -float(np.mean(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps))) if len(y) else math.nan
    return {"brier": round(float(np.mean((p - y) ** 2)), 4) if len(y) else math.nan, "log_loss": round(loss, 4),
            "negatives_at_0_8": int(np.sum((p >= 0.8) & (y == 0))),
            "positives_at_0_8": int(np.sum((p >= 0.8) & (y == 1)))}


def reliability(p: np.ndarray, y: np.ndarray) -> list[dict[str, Any]]:
    out = []
    for low, high in zip(BANDS, BANDS[1:], strict=False):
        inside = (p >= low) & (p < high)
        if inside.any():
            out.append({"band": f"{low:.1f}-{min(high, 1.0):.1f}", "n": int(inside.sum()),
                        "predicted": round(float(p[inside].mean()), 3), "observed": round(float(y[inside].mean()), 3)})
    return out


def fits(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per domain: the coefficients (with and without the cosine features) and how well they are calibrated."""
    usable = [r for r in rows if r["features"]]
    x_all = np.array([vector(r["features"]) for r in usable])
    y_all = np.array([1.0 if r["label"] else 0.0 for r in usable])
    domain_of = np.array([r["domain"] for r in usable])
    fold = np.array([r["question"] % 2 for r in usable])
    pooled = fit(x_all, y_all), fit(keyword_only(x_all), y_all)
    out: dict[str, Any] = {}
    for d in DOMAINS:
        mine = domain_of == d
        x, y, f = x_all[mine], y_all[mine], fold[mine]
        own = int(y.sum()) >= MIN_POSITIVES
        w, wk = (fit(x, y), fit(keyword_only(x), y)) if own else pooled
        held = np.zeros(len(y))
        for k in (0, 1):  # out of fold: fitted on the other half of the questions
            train = f != k
            if own and y[train].sum() >= 2:
                held[f == k] = predict(fit(x[train], y[train]), x[f == k])
            else:
                pool_train = ~((domain_of == d) & (fold == k))
                held[f == k] = predict(fit(x_all[pool_train], y_all[pool_train]), x[f == k])
        p = predict(w, x) if len(y) else np.zeros(0)
        out[d] = {"pairs": int(len(y)), "positives": int(y.sum()), "own_fit": own,
                  "coefficients": [round(float(v), 4) for v in w],
                  "keyword_only": [round(float(v), 4) for v in wk],
                  "in_sample": scores(p, y), "out_of_fold": scores(held, y), "reliability": reliability(p, y),
                  "reliability_out_of_fold": reliability(held, y)}
    return out


def write_table(model: str, fitted: dict[str, Any], pairs: int) -> None:
    from recall.relevance_table import KEYWORD_ONLY, TABLE

    table = {m: dict(v) for m, v in TABLE.items()}
    table[model] = {d: fitted[d]["coefficients"] for d in DOMAINS}
    keyword = {**KEYWORD_ONLY, **{d: fitted[d]["keyword_only"] for d in DOMAINS}} if model == "all-MiniLM-L6-v2" \
        else KEYWORD_ONLY  # the keyword-only scale comes from the default model's run
    header = (f'"""Relevance calibration per embedding model and domain, coefficients in domain/relevance.py FEATURES\n'
              f'order ({", ".join(FEATURES)}), fitted by `python -m bench.relevance_calibration`\n'
              f'on its own labelled fixture (bench/relevance_fixtures.py). Generated: refit rather than edit."""\n\n'
              f"# {model}: fitted {datetime.now(UTC).date().isoformat()} on {pairs} labelled pairs (L2 {L2}).\n")
    body = (f"TABLE: dict[str, dict[str, list[float]]] = {pprint.pformat(table, width=110, sort_dicts=True)}\n\n"
            f"KEYWORD_ONLY: dict[str, list[float]] = {pprint.pformat(dict(keyword), width=110, sort_dicts=True)}\n")
    TABLE_FILE.write_text(header + body)


def run(write: bool, rows_from: Path | None) -> dict[str, Any]:
    from infra.settings import Settings

    model = Settings().embedding.embedding_model
    if rows_from is not None:  # refit on the pairs a previous run labelled
        previous = json.loads(rows_from.read_text())
        model, loads, asks, rows = previous["model"], previous["loads"], previous["asks"], previous["rows"]
    else:
        with stack() as client:
            print(machine_line(), flush=True)
            loads = load(client, FIXTURE)
            print(f"  loaded {loads}", flush=True)
            asked = ask(client, FIXTURE, k=None)
        asks, rows = len(asked), labelled_rows(FIXTURE, asked)
    fitted = fits(rows)
    if write:
        write_table(model, fitted, len(rows))
    return {"bench": "relevance_calibration", "model": model, "machine": machine(), "loads": loads, "l2": L2,
            "asks": asks, "pairs": len(rows), "domains": fitted, "table_written": write, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-write", action="store_true", help="report only: leave recall/relevance_table.py")
    parser.add_argument("--rows", type=Path, help="refit on the labelled pairs of a previous run's results file")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    result = run(not args.no_write, args.rows)
    for d, f in result["domains"].items():
        print(f"{d:12s} pairs {f['pairs']:4d} positives {f['positives']:3d} own fit {f['own_fit']!s:5s} "
              f"in-sample brier {f['in_sample']['brier']} out-of-fold brier {f['out_of_fold']['brier']} "
              f"negatives >= 0.8 out of fold {f['out_of_fold']['negatives_at_0_8']}")
        print(f"             coefficients {f['coefficients']} keyword-only {f['keyword_only']}")
    rows = save_result("", result, RESULTS_DIR / "runs" / f"relevance-calibration-{stamp()}.json")
    summary = {k: v for k, v in result.items() if k != "rows"}
    print(f"written: {save_result('relevance-calibration', summary, args.output)}; the labelled pairs: {rows}")


if __name__ == "__main__":
    main()
