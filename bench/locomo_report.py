"""Printing a LoCoMo run's report (bench/locomo.py): the metrics per category, abstention, the attribution of lost
evidence, and the comparison with the baselines of ../shared/eval/README.md."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from bench.common import wide
from bench.locomo_data import ABSTAIN_CATEGORY, CATEGORY_NAMES
from bench.locomo_metrics import ATTRIBUTION_STAGES, LABELS, METRICS, STAGE_LABELS

# From ../shared/eval/README.md (dev split, 1,224 questions, categories 1-4, same protocol, 2-core machine).
BASELINES: list[dict[str, Any]] = [
    {"system": "BM25 (bm25s, Lucene, k1 1.5, stopwords + Snowball)", "r@1": .276, "r@5": .476, "r@10": .555,
     "hit@10": .621, "mrr@10": .403, "ndcg@10": .423, "p50_ms": 0.3},
    {"system": "dense, all-MiniLM-L6-v2, exact cosine", "r@1": .168, "r@5": .381, "r@10": .466,
     "hit@10": .525, "mrr@10": .295, "ndcg@10": .321, "p50_ms": 25},
    {"system": "hybrid recipe (BM25 ∪ dense top-50; 0.6·cos + 0.4·minmax BM25)", "r@1": .293, "r@5": .529,
     "r@10": .618, "hit@10": .686, "mrr@10": .441, "ndcg@10": .466, "p50_ms": 27},
    {"system": "reciprocal rank fusion, k = 60", "r@1": .235, "r@5": .467, "r@10": .554, "hit@10": .623,
     "mrr@10": .381, "ndcg@10": .403, "p50_ms": 25},
    {"system": "MemPalace 3.11.0 (default search, MiniLM)", "r@1": .228, "r@5": .447, "r@10": .530,
     "hit@10": .597, "mrr@10": .360, "ndcg@10": .386, "p50_ms": 100},
    {"system": "Mem0 2.2.1 OSS, infer=False", "r@1": .168, "r@5": .381, "r@10": .466, "hit@10": .525,
     "mrr@10": .295, "ndcg@10": .321, "p50_ms": 39},
]


def _f(x: float) -> str:
    return f"{x:.3f}".lstrip("0") if 0 <= x < 1 else f"{x:.3f}"


def print_report(report: dict[str, Any], console: Console) -> None:
    console = wide(console)  # a log file or a pipe: do not wrap the tables
    table = Table(title="LoCoMo retrieval (categories 1-4, micro-averaged over questions)")
    table.add_column("category", no_wrap=True)
    table.add_column("n", justify="right")
    for metric in METRICS:
        table.add_column(LABELS[metric], justify="right")
    table.add_column("abstained", justify="right")
    wrong = report.get("answerable_abstained", {})
    for cat, agg in report["by_category"].items():
        table.add_row(f"{cat} {CATEGORY_NAMES[int(cat)]}", str(agg["n"]), *(_f(agg[m]) for m in METRICS),
                      f"{wrong.get('by_category', {}).get(cat, 0):.1%}")
    overall = report["overall"]
    table.add_row("[bold]overall[/bold]", str(overall["n"]), *(f"[bold]{_f(overall[m])}[/bold]" for m in METRICS),
                  f"[bold]{wrong.get('rate') or 0:.1%}[/bold] (wrongly)")
    c5 = report["category_5"]
    if c5["n"]:
        table.add_row(f"{ABSTAIN_CATEGORY} {CATEGORY_NAMES[ABSTAIN_CATEGORY]}", str(c5["n"]), *("" for _ in METRICS),
                      f"[bold]{c5['abstain_rate']:.1%}[/bold] (rightly)")
    console.print(table)
    if c5["n"]:
        console.print(f"abstention: {c5['abstain_rate']:.1%} of category-5 (adversarial) questions abstained "
                      f"({c5['abstained']}/{c5['n']}); {wrong.get('rate') or 0:.1%} of answerable questions wrongly "
                      f"abstained ({wrong.get('abstained', 0)}/{wrong.get('n', 0)})")
    if report.get("attribution"):
        print_attribution(report["attribution"], console)

    lat = report["latency_ms"]
    compare = Table(title="Against the baselines (../shared/eval/README.md)")
    for col in ("system", "R@1", "R@5", "R@10", "hit@10", "MRR@10", "nDCG@10", "query p50"):
        compare.add_column(col, justify="left" if col == "system" else "right")
    for b in report["baselines"]:
        compare.add_row(b["system"], *(_f(b[m]) for m in ("r@1", "r@5", "r@10", "hit@10", "mrr@10", "ndcg@10")),
                        f"{b['p50_ms']:g} ms")
    compare.add_row("[bold]engramlog (this run)[/bold]",
                    *(f"[bold]{_f(overall[m])}[/bold]" for m in ("r@1", "r@5", "r@10", "hit@10", "mrr@10",
                                                                  "ndcg@10")),
                    f"[bold]{lat['server_p50']:.1f} ms[/bold]")
    console.print(compare)

    if c5["n"]:
        console.print(f"category 5 (adversarial, {c5['n']} questions): abstained {c5['abstained']} "
                      f"({c5['abstain_rate']:.1%}); mean results {c5['mean_results']:.1f}; top score p50 "
                      f"{c5['top_score_p50'] or 0:.3f} (categories 1-4: {c5['top_score_p50_categories_1_4'] or 0:.3f})")
    console.print(f"recall latency over {lat['queries']} queries: client p50 {lat['client_p50']:.1f} ms, "
                  f"p95 {lat['client_p95']:.1f} ms; server p50 {lat['server_p50']:.1f} ms, "
                  f"p95 {lat['server_p95']:.1f} ms")
    ing = report["ingest"]
    if ing.get("dispositions"):
        console.print(f"ingest ({'must_keep' if ing.get('must_keep') else 'salience gate on'}): "
                      + ", ".join(f"{n} {d}" for d, n in sorted(ing["dispositions"].items())))
        if "evidence_admitted_active" in ing:
            console.print(f"evidence turns admitted active: {ing['evidence_admitted_active']:.1%} "
                          f"(held by an active memory, reinforced included: {ing['evidence_held_active']:.1%}) of "
                          f"{ing['evidence_turns']}; all turns not kept active: {ing['turns_not_kept_active']:.1%}")
    console.print(f"ingest: {ing['memories']} memories in {ing['write_s']:.1f}s "
                  f"({ing['memories_per_s']}/s); queryable (all projections caught up) "
                  f"{ing.get('queryable_after_s', float('nan')):.1f}s after the last write")
    m = report["machine"]
    console.print(f"machine: {m.get('cpus')} CPUs, {m.get('cpu_model', '')}, {m['platform']}")


def print_attribution(totals: dict[str, Any], console: Console) -> None:
    """Where the gold evidence was lost, per question (its best-placed gold memory) and per gold memory."""
    table = Table(title=f"Attribution: the stage where gold evidence was lost ({totals['questions']} questions, "
                        f"{totals['gold_memories']} gold memories)")
    for col in ("stage", "questions", "share", "gold memories", "share "):
        table.add_column(col, justify="left" if col == "stage" else "right")
    nq, ni = totals["questions"] or 1, totals["gold_memories"] or 1
    for stage in ATTRIBUTION_STAGES:
        q, i = totals["by_question"][stage], totals["by_gold_memory"][stage]
        if stage == "not_kept" and not q and not i:
            continue
        table.add_row(STAGE_LABELS[stage], str(q), f"{q / nq:.1%}", str(i), f"{i / ni:.1%}")
    console.print(table)
    console.print(f"gold memories that were candidates: {totals['gold_candidate_share'] or 0:.1%}; that reached the "
                  f"rerank pool: {totals['gold_reached_pool_share'] or 0:.1%}")
