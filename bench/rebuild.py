"""Full rebuild time: projections.rebuild.rebuild of every projection (memories, keyword, vectors, and any
registered later) over --n memories.

The corpus is built as in bench.recall (synthetic memories, embedding cache seeded from a pool of real
embeddings, every projection caught up). Then each projection is rebuilt from position 0 into fresh
tables (with their indexes, HNSW included, maintained row by row as a live rebuild does) and swapped in.
The embedding cache survives rebuilds by design, so the vectors rebuild reads every embedding from it and
runs no model: that is what a rebuild costs in production, where every text was embedded once already.

    python -m bench.rebuild [--n 10000] [--output FILE]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.common import machine, machine_line, save_result, start_stack, wide
from bench.corpus import build_corpus, memory_texts, pool_embeddings, projector_names, sentences


def run(n: int = 10_000, agents: int = 100, pool_size: int = 5000, console: Console | None = None,
        output: Path | None = None) -> dict[str, Any]:
    console = wide(console or Console())
    info = machine()
    console.print(f"[bold]full rebuild[/bold] of every projection over {n:,} memories")
    console.print(machine_line(info))
    pool = sentences(min(pool_size, n))
    texts, pool_index = memory_texts(n, pool)
    rows: list[dict[str, Any]] = []
    with start_stack() as stack:
        from infra.db import get_engine
        from infra.settings import get_settings
        from projections.rebuild import rebuild
        from projections.registry import get_projector

        engine = get_engine()
        settings = get_settings()
        pool_vectors, _ = pool_embeddings(pool, settings.embedding.embedding_model)
        build = build_corpus(engine, "bench", texts, pool_index, pool_vectors, 0, n, agents=agents, total=n,
                             bulk_index=False)
        console.print(f"  built {n:,} memories: {build}")
        for name in projector_names():
            t0 = time.perf_counter()
            checkpoint = rebuild(engine, get_projector(name))
            seconds = time.perf_counter() - t0
            rows.append({"projection": name, "memories": n, "seconds": round(seconds, 3),
                         "memories_per_s": round(n / seconds, 1), "position": checkpoint.position})
            console.print(f"  rebuilt {name:8} in {seconds:6.2f}s ({n / seconds:,.0f} memories/s)")
    total = sum(r["seconds"] for r in rows)
    table = Table(title=f"Full rebuild (projections.rebuild.rebuild, batch 1000) over {n:,} memories")
    for col in ("projection", "seconds", "memories/s"):
        table.add_column(col, justify="left" if col == "projection" else "right")
    for r in rows:
        table.add_row(r["projection"], f"{r['seconds']:.2f}", f"{r['memories_per_s']:,.0f}")
    table.add_row(f"[bold]all {len(rows)}[/bold]", f"[bold]{total:.2f}[/bold]", f"{n / total:,.0f}")
    console.print(table)
    result = {"bench": "rebuild", "n": n, "machine": info, "database": stack["database"], "build": build,
              "rows": rows, "total_seconds": round(total, 3),
              "notes": "vectors rebuild reads every embedding from the embedding cache (no model run)."}
    path = save_result("rebuild", result, output)
    console.print(f"saved {path}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--pool", type=int, default=5000)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    run(args.n, args.agents, args.pool, output=args.output)


if __name__ == "__main__":
    main()
