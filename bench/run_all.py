"""Run every benchmark (`make bench`), each in its own process on its own fresh embedded stack, and print a
summary of the figures. Each benchmark also saves its own JSON under bench/results/; the summary goes to
bench/results/all-<timestamp>.json.

    python -m bench.run_all                      # append, projection, rebuild at 10k; recall at 10k and 100k
    python -m bench.run_all --recall-sizes 10000 # skip the 100k step (it takes several minutes on 2 cores)
    python -m bench.run_all --quick              # small sizes, a minute or two: a smoke run
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.common import RESULTS_DIR, machine, machine_line, save_result, stamp, wide

ROOT = Path(__file__).resolve().parent.parent


def _run(console: Console, module: str, args: list[str], output: Path) -> dict[str, Any] | None:
    cmd = [sys.executable, "-m", f"bench.{module}", *args, "--output", str(output)]
    console.rule(" ".join(cmd[1:]))
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT)
    console.print(f"[dim]{module}: exit {done.returncode} after {time.perf_counter() - started:.0f}s[/dim]")
    if done.returncode != 0 or not output.exists():
        return None
    return json.loads(output.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="events for append, projection and rebuild")
    parser.add_argument("--n-vectors", type=int, default=2000, help="events for the vectors projector (embeds)")
    parser.add_argument("--recall-sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="2k events, recall at 2k and 5k, 50 queries")
    parser.add_argument("--only", nargs="+", choices=["append", "projection", "recall", "rebuild", "recallable_lag",
                                                       "knowledge"])
    args = parser.parse_args()
    if args.quick:
        args.n, args.n_vectors, args.recall_sizes, args.queries = 2000, 300, [2000, 5000], 50

    console = wide(Console())
    info = machine()
    console.print(machine_line(info))
    run_stamp = stamp()
    plan = {
        "append": ["--n", str(args.n)],
        "projection": ["--n", str(args.n), "--n-vectors", str(args.n_vectors)],
        "recall": ["--n", *map(str, args.recall_sizes), "--queries", str(args.queries)],
        "rebuild": ["--n", str(args.n)],
        "recallable_lag": ["--singles", "10" if args.quick else "50", "--batches", "1" if args.quick else "2"],
        "knowledge": (["--sections", "200", "--queries", "40", "--sizes", "1000", "--memories", "200", "--real", "10"]
                      if args.quick else ["--sections", "1000", "--queries", "200", "--sizes", "10000"]),
    }
    results: dict[str, Any] = {}
    started = time.perf_counter()
    for module, module_args in plan.items():
        if args.only and module not in args.only:
            continue
        results[module] = _run(console, module, module_args, RESULTS_DIR / f"{module}-{run_stamp}.json")
    elapsed = time.perf_counter() - started

    table = Table(title="Engramlog benchmarks")
    table.add_column("benchmark")
    table.add_column("figure", justify="right")
    for module, result in results.items():
        if result is None:
            table.add_row(module, "[red]failed[/red]")
            continue
        for label, figure in summary_rows(module, result):
            table.add_row(label, figure)
    console.print(table)
    console.print(machine_line(info) + f"; {elapsed:.0f}s in all")
    path = save_result("all", {"machine": info, "elapsed_s": round(elapsed, 1), "plan": plan,
                               "results": results}, RESULTS_DIR / f"all-{run_stamp}.json")
    console.print(f"saved {path}")
    if any(r is None for r in results.values()):
        sys.exit(1)


def summary_rows(module: str, result: dict[str, Any]) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    if module == "append":
        for r in result["rows"]:
            rows.append((f"append, {r['layer']}, {r['batch']}/tx", f"{r['events_per_s']:,.0f} events/s"))
    elif module == "projection":
        for r in result["rows"]:
            if r["events_per_s"] is not None:
                rows.append((f"project {r['projector']} ({r['events']:,})", f"{r['events_per_s']:,.0f} events/s"))
        rows.append(("embedding model alone", f"{result['model_texts_per_s']:,.0f} texts/s"))
    elif module == "recall":
        for step in result["steps"]:
            for scope in ("tenant", "agent"):
                s = step[scope]
                label = f"recall at {step['memories']:,}, {'whole tenant' if scope == 'tenant' else 'one agent (1%)'}"
                rows.append((label, f"p50 {s['wall_ms']['p50']:.1f} ms / p95 {s['wall_ms']['p95']:.1f} ms"))
    elif module == "rebuild":
        for r in result["rows"]:
            rows.append((f"rebuild {r['projection']} ({result['n']:,})", f"{r['seconds']:.2f} s"))
        rows.append((f"rebuild all {len(result['rows'])} ({result['n']:,})", f"{result['total_seconds']:.2f} s"))
    elif module == "recallable_lag":
        s, b = result["singles"]["lag_ms"], result["batches"]["lag_ms"]
        rows.append(("write → recallable, single governed writes", f"p50 {s['p50']:.0f} ms / p95 {s['p95']:.0f} ms"))
        rows.append(("write → recallable, 1,000-memory batches", f"p50 {b['p50']:.0f} ms / p95 {b['p95']:.0f} ms"))
        rows.append(("vectors projector embedding rate", f"{result['vectors_embedding_rate_per_s']:,.0f} texts/s"))
    elif module == "knowledge":
        for mode in ("lazy", "eager"):
            q = result["quality"][mode]
            rows.append((f"knowledge {mode}: R@10 shared / paraphrase",
                         f"{q['recall_at_10']['shared']:.2f} / {q['recall_at_10']['paraphrase']:.2f}"))
        rows.append(("knowledge: texts embedded lazy / eager", "{lazy:,} / {eager:,}".format(
            **result["embedding"]["texts_embedded"])))
        for step in result["latency"]:
            for mode in ("lazy", "eager"):
                s = step[mode]["wall_ms"]
                rows.append((f"knowledge recall at {step['sections'][mode]:,} sections, {mode}",
                             f"p50 {s['p50']:.1f} ms / p95 {s['p95']:.1f} ms"))
    return rows


if __name__ == "__main__":
    main()
