"""Recall latency p50/p95 at 10k and 100k memories: recall.service.recall with the real MiniLM embedder.

The corpus grows in steps (10k, then 90k more to 100k) in one tenant, spread over 100 agents, and recall is
measured at each size for two scopes: the whole tenant (at 100k, more rows than the exact-scan limit, so the
vector leg uses iterative HNSW) and one agent (1% of the tenant: exact scan of its rows). Each query is a
fresh synthetic question, embedded at query time.

Figures per query: `wall` = the whole recall.service.recall call (query embedding, BM25 and vector legs,
fusion, fetching the memories, and appending the RecallServed hit-log event); `served` = the answer's
latency_ms (the same without the hit-log append); `embed` = the query embedding alone.

How the corpus is built (documented, because embedding 100k texts would take ~10 min on 2 cores): memories
are distinct texts "<speaker>: <sentence>" over a pool of 5,000 distinct synthetic sentences; the pool is
embedded once with the real model, and each memory's cached embedding is a jittered copy (cosine ~0.98) of
its sentence's embedding, written into embedding_cache before the events are appended. The events then go
through services.append_events (the API's write path) in batches of 1,000 and the unchanged projectors (the vectors
projector finds every text in the cache). For the bulk load the HNSW index is dropped and recreated from its exact
definition (one build instead of 100k incremental inserts); then ANALYZE. Query vectors are always real.

    python -m bench.recall [--n 10000 100000] [--queries 200] [--agents 100] [--output FILE] [--reuse]

Stage timings: each scope's p50/p95 per funnel stage (the answer's details.timings_ms).
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.common import latency_stats, machine, machine_line, save_result, start_stack, wide
from bench.corpus import build_corpus, memory_texts, pool_embeddings, questions, sentences

WARMUP = 10


def measure(engine: Any, tenant: str, agent_id: str | None, qs: list[str]) -> dict[str, Any]:
    from infra.embedding import get_embedder
    from infra.settings import get_settings
    from recall.scope import Scope
    from recall.service import RecallRequest, recall

    settings = get_settings()
    embedder = get_embedder(settings.embedding.embedding_model)
    scope = Scope(tenant, agent_id)
    metadata = {"actor": "bench", "source": "bench"}
    for q in qs[:WARMUP]:
        recall(engine, embedder, settings, RecallRequest(scope, q, 10), metadata)
    wall, served = [], []
    stages: dict[str, list[float]] = {}
    methods: Counter[str] = Counter()
    results, candidates = 0, 0
    measured = qs[WARMUP:]
    for q in measured:
        t0 = time.perf_counter()
        answer = recall(engine, embedder, settings, RecallRequest(scope, q, 10), metadata)
        wall.append((time.perf_counter() - t0) * 1000)
        served.append(answer.latency_ms)
        for stage, ms in (answer.details.get("timings_ms") or {}).items():
            stages.setdefault(stage, []).append(ms)
        explanation = getattr(answer, "explanation", None) or {}
        methods[answer.details.get("vector_method") or explanation.get("vector_method") or "?"] += 1
        results += len(answer.results)
        candidates += int(answer.details.get("candidates", 0) or 0)
    return {"queries": len(measured), "wall_ms": latency_stats(wall), "served_ms": latency_stats(served),
            "stages_ms": {stage: latency_stats(ms) for stage, ms in stages.items()},
            "vector_method": dict(methods), "mean_results": round(results / len(measured), 2),
            "mean_candidates": round(candidates / len(measured), 1)}


def embed_latency(qs: list[str]) -> dict[str, float]:
    from infra.embedding import get_embedder
    from infra.settings import get_settings

    embedder = get_embedder(get_settings().embedding.embedding_model)
    times = []
    measured = qs[WARMUP:]
    for q in measured:
        t0 = time.perf_counter()
        embedder.encode_one(q)
        times.append((time.perf_counter() - t0) * 1000)
    return latency_stats(times)


def _held(engine: Any) -> int:
    from sqlalchemy import text

    with engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM memories WHERE tenant = 'bench'")).scalar_one())


def run(sizes: list[int], n_queries: int = 200, agents: int = 100, pool_size: int = 5000,
        console: Console | None = None, output: Path | None = None, reuse: bool = False) -> dict[str, Any]:
    console = wide(console or Console())
    info = machine()
    sizes = sorted(sizes)
    console.print(f"[bold]recall latency[/bold] at {', '.join(f'{s:,}' for s in sizes)} memories, "
                  f"{n_queries} queries per scope, {agents} agents")
    console.print(machine_line(info))
    pool = sentences(min(pool_size, sizes[-1]))
    texts, pool_index = memory_texts(sizes[-1], pool)
    qs = questions(n_queries + WARMUP)
    steps: list[dict[str, Any]] = []
    with start_stack() as stack:
        from infra.db import get_engine
        from infra.embedding import get_embedder
        from infra.settings import get_settings

        engine = get_engine()
        settings = get_settings()
        get_embedder(settings.embedding.embedding_model).warm()
        pool_vectors, pool_s = pool_embeddings(pool, settings.embedding.embedding_model)
        console.print(f"  pool: {len(pool)} sentences, embedded in {pool_s:.1f}s"
                      + (" (read from the temp-file cache)" if not pool_s else ""))
        bulk_index = stack["database"].startswith("embedded") or reuse  # reuse: the DB is the run's own
        built = min(_held(engine), sizes[-1]) if reuse else 0
        for size in sizes:
            t0 = time.perf_counter()
            if reuse and _held(engine) >= size:  # an external DATABASE_URL that a previous run built
                phases = {"reused": _held(engine)}
            else:
                phases = build_corpus(engine, "bench", texts, pool_index, pool_vectors, built, size, agents=agents,
                                      total=sizes[-1], bulk_index=bulk_index)
            console.print(f"  built {built:,} -> {size:,} memories in {time.perf_counter() - t0:.1f}s: {phases}")
            built = size
            step: dict[str, Any] = {"memories": size, "build": phases, "embed_ms": embed_latency(qs)}
            step["tenant"] = measure(engine, "bench", None, qs)
            step["agent"] = measure(engine, "bench", "agent-0", qs)
            step["agent_rows"] = len(range(0, size, agents))
            for scope in ("tenant", "agent"):
                s = step[scope]
                console.print(f"  {size:>7,} {scope:6}: wall p50 {s['wall_ms']['p50']:.1f} ms p95 "
                              f"{s['wall_ms']['p95']:.1f} ms; served p50 {s['served_ms']['p50']:.1f} ms p95 "
                              f"{s['served_ms']['p95']:.1f} ms; vector leg {s['vector_method']}")
                console.print("           stages p50/p95 ms: " + ", ".join(
                    f"{n} {v['p50']:.1f}/{v['p95']:.1f}" for n, v in s["stages_ms"].items()))
            steps.append(step)

    table = Table(title="Recall latency (recall.service.recall, k = 10, real query embeddings)")
    for col in ("memories", "scope", "rows in scope", "vector leg", "wall p50", "wall p95", "served p50",
                "served p95", "embed p50"):
        table.add_column(col, justify="left" if col in ("scope", "vector leg") else "right")
    for step in steps:
        for scope, rows in (("tenant", step["memories"]), ("agent (1%)", step["agent_rows"])):
            s = step["tenant" if scope == "tenant" else "agent"]
            table.add_row(f"{step['memories']:,}", scope, f"{rows:,}", ",".join(s["vector_method"]),
                          f"{s['wall_ms']['p50']:.1f} ms", f"{s['wall_ms']['p95']:.1f} ms",
                          f"{s['served_ms']['p50']:.1f} ms", f"{s['served_ms']['p95']:.1f} ms",
                          f"{step['embed_ms']['p50']:.1f} ms")
    console.print(table)
    result = {"bench": "recall", "sizes": sizes, "queries": n_queries, "agents": agents, "pool": len(pool),
              "machine": info, "database": stack["database"], "bulk_index": bulk_index, "steps": steps,
              "pool_embed_s": round(pool_s, 2),
              "notes": "wall = recall() call incl. query embedding and the RecallServed append; served = the "
                       "answer's latency_ms (no hit-log append); embed = query embedding alone. Memory vectors "
                       "are jittered copies of 5k real pool embeddings (see the module docstring)."}
    path = save_result("recall", result, output)
    console.print(f"saved {path}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000], help="corpus sizes, ascending")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--pool", type=int, default=5000, help="distinct sentences really embedded")
    parser.add_argument("--output", type=Path)
    parser.add_argument("--reuse", action="store_true",
                        help="with an external DATABASE_URL: measure the corpus a previous run built (same --n, "
                             "--agents, --pool) instead of building it again; e.g. code before and after a change")
    args = parser.parse_args()
    run(args.n, args.queries, args.agents, args.pool, output=args.output, reuse=args.reuse)


if __name__ == "__main__":
    main()
