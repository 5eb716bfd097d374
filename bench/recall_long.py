"""Recall stage costs on long texts vs short ones: the same number of memories in one agent, the same funnel.

Two tenants, each one agent: `long` holds N coding-assistant chat messages (bench/coding_chat.py: prose, code,
tracebacks, logs; a few hundred characters to a few KB each), `short` holds N one-sentence memories
(bench/corpus.py). Both are written through services.append_events (the API's write path, must_keep as an
import would) and projected into every read model (bench.corpus.project, real MiniLM vectors); then each runs
the same number of queries of its own kind (questions about its texts; some with pronouns, so coreference
reads the recent memories; some naming entities, so the entity boost and the entity channel run) through
recall.service.recall with the real embedder, after a warm-up. Figures: p50/p95/mean of the whole call and of
each stage's `details.timings_ms`, side by side, with the ratio long/short of the p50s; and the same again
"cold": with the memos of derived text views (domain.memo) emptied before each query, the cost of a query whose
memories no query has read before.

    python -m bench.recall_long [--n 104] [--queries 50] [--output FILE] [--profile]

--profile also runs the long corpus's queries once more under cProfile and prints the top functions by
cumulative time (what to look at when a stage costs more on long texts).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.coding_chat import messages, queries
from bench.common import latency_stats, machine, machine_line, save_result, start_stack, wide
from bench.corpus import append_memories, memory_statuses, project, projector_names, questions, sentences

STAGES = ("coref", "embed", "candidates", "composite", "prf", "graph", "rerank", "abstain")
WARMUP = 5
AGENT = "agent-0"
SHORT_PRONOUN_QUERIES = ("What did she buy?", "Where did he go with it?", "When did they cancel it?",
                         "What did her sister recommend?", "Did he fix his bike?")


def short_queries(n: int) -> list[str]:
    """Questions about the short corpus, one in five with a pronoun (as in the long corpus's queries)."""
    qs = questions(n)
    return [SHORT_PRONOUN_QUERIES[i // 5 % len(SHORT_PRONOUN_QUERIES)] if i % 5 == 4 else q for i, q in enumerate(qs)]


def build(engine: Any, tenant: str, texts: list[str]) -> dict[str, Any]:
    phases = {"append_s": round(append_memories(engine, tenant, texts, agents=1), 3)}
    for name in projector_names():
        _, seconds = project(engine, name)
        phases[f"project_{name}_s"] = round(seconds, 3)
    chars = [len(t) for t in texts]
    return {**phases, "statuses": memory_statuses(engine, tenant),
            "chars": {"min": min(chars), "median": statistics.median(chars), "max": max(chars), "total": sum(chars)}}


def measure(engine: Any, tenant: str, qs: list[str], cold: bool = False) -> dict[str, Any]:
    """`cold`: every memo of derived text views emptied before each query (domain.memo), so each query pays for
    reading its memories' texts as if it were the first to see them."""
    from domain.memo import clear_all
    from infra.embedding import get_embedder
    from infra.settings import get_settings
    from recall.scope import Scope
    from recall.service import RecallRequest, recall

    settings = get_settings()
    embedder = get_embedder(settings.embedding.embedding_model)
    scope = Scope(tenant, AGENT)
    metadata = {"actor": "bench", "source": "bench"}
    for q in qs[:WARMUP]:
        recall(engine, embedder, settings, RecallRequest(scope, q, 10), metadata)
    wall: list[float] = []
    stages: dict[str, list[float]] = {s: [] for s in STAGES}
    candidates = resolved = abstained = 0
    for q in qs[WARMUP:]:
        if cold:
            clear_all()
        t0 = time.perf_counter()
        answer = recall(engine, embedder, settings, RecallRequest(scope, q, 10), metadata)
        wall.append((time.perf_counter() - t0) * 1000)
        for s in STAGES:
            stages[s].append(float(answer.details["timings_ms"].get(s, 0.0)))
        candidates += int(answer.details.get("candidates", 0))
        resolved += answer.explanation["query"]["resolved"] != q
        abstained += answer.abstained is not None
    n = len(wall)
    return {"queries": n, "wall_ms": latency_stats(wall), "stages_ms": {s: latency_stats(v) for s, v in stages.items()},
            "mean_candidates": round(candidates / n, 1), "coref_resolved": resolved, "abstained": abstained}


def profile(engine: Any, tenant: str, qs: list[str], top: int = 30) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    measure(engine, tenant, qs)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def run(n: int = 104, n_queries: int = 50, console: Console | None = None, output: Path | None = None,
        with_profile: bool = False) -> dict[str, Any]:
    console = wide(console or Console())
    info = machine()
    console.print(f"[bold]recall stage costs, long vs short texts[/bold]: {n} memories in one agent each, "
                  f"{n_queries} queries each (+{WARMUP} warm-up)")
    console.print(machine_line(info))
    corpora = {"long": (messages(n), queries(n_queries + WARMUP)),
               "short": ([f"Sam: {s}" for s in sentences(n)], short_queries(n_queries + WARMUP))}
    results: dict[str, Any] = {}
    with start_stack() as stack:
        from infra.db import get_engine
        from infra.embedding import get_embedder
        from infra.settings import get_settings

        engine = get_engine()
        get_embedder(get_settings().embedding.embedding_model).warm()
        for tenant, (texts, _) in corpora.items():
            results[tenant] = {"build": build(engine, tenant, texts)}
            console.print(f"  {tenant}: built {results[tenant]['build']}")
        for tenant, (_, qs) in corpora.items():  # measured after both are built: the same database state
            results[tenant].update(measure(engine, tenant, qs))
            results[tenant]["cold"] = measure(engine, tenant, qs, cold=True)
        profiled = profile(engine, "long", corpora["long"][1]) if with_profile else None

    table = Table(title=f"Recall per stage, p50 / p95 ms ({n} memories in one agent, k = 10)")
    for col in ("stage", "long p50", "long p95", "short p50", "short p95", "long/short p50", "long cold p50",
                "long cold p95", "short cold p50"):
        table.add_column(col, justify="left" if col == "stage" else "right")
    long_, short = results["long"], results["short"]
    rows = [("total (wall)", long_["wall_ms"], short["wall_ms"], long_["cold"]["wall_ms"], short["cold"]["wall_ms"])]
    rows += [(s, long_["stages_ms"][s], short["stages_ms"][s], long_["cold"]["stages_ms"][s],
              short["cold"]["stages_ms"][s]) for s in STAGES]
    for name, lw, sw, lc, sc in rows:
        ratio = lw["p50"] / sw["p50"] if sw["p50"] > 0 else float("nan")
        table.add_row(name, f"{lw['p50']:.1f}", f"{lw['p95']:.1f}", f"{sw['p50']:.1f}", f"{sw['p95']:.1f}",
                      f"{ratio:.2f}", f"{lc['p50']:.1f}", f"{lc['p95']:.1f}", f"{sc['p50']:.1f}")
    console.print(table)
    for tenant in corpora:
        r = results[tenant]
        console.print(f"  {tenant}: mean candidates {r['mean_candidates']}, coref resolved {r['coref_resolved']}, "
                      f"abstained {r['abstained']} of {r['queries']}")
    if profiled:
        console.print(profiled)
    result = {"bench": "recall_long", "memories": n, "queries": n_queries, "machine": info,
              "database": stack["database"], "corpora": results,
              "notes": "long = bench/coding_chat.py messages, short = one-sentence bench/corpus.py memories; "
                       "stages from details.timings_ms; wall = the recall() call incl. the hit-log append"}
    path = save_result("recall-long", result, output)
    console.print(f"saved {path}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=104, help="memories per corpus")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--profile", action="store_true", help="cProfile the long corpus's queries")
    args = parser.parse_args()
    run(args.n, args.queries, output=args.output, with_profile=args.profile)


if __name__ == "__main__":
    main()
