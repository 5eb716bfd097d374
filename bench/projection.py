"""Projection throughput: projections.runner.catch_up on MemoryRecorded events, per projector.

- vectors, cold: the first --n-vectors events (distinct texts), every text embedded by all-MiniLM-L6-v2 on the
  CPU (this is the embedding cost; ~150-240 texts/s on 2 cores, so a few thousand events are enough);
- vectors, warm: the same events projected again from scratch (table emptied, checkpoint reset): every text
  is found in the embedding cache, as in a rebuild or a replay, so this is the projector's own cost;
- memories and keyword (BM25 postings), and any other registered projection: all --n events.
The events are appended with eventstore.append alone (no write-path work), so each projector's cost is its own.
The raw model throughput (texts/s at the embedder's batch size) is measured on 3 x 256 of the texts for reference.

    python -m bench.projection [--n 10000] [--n-vectors 2000] [--batch 500] [--output FILE]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.common import machine, machine_line, save_result, start_stack, wide
from bench.corpus import append_memories, memory_texts, project, projector_names, sentences


def _reset(engine: Any, name: str, table: str) -> None:
    from sqlalchemy import text

    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {table}"))
        conn.execute(text("DELETE FROM projection_checkpoints WHERE name = :n"), {"n": name})


def _rate(value: float | None) -> str:
    return f"{value:>9,.0f}" if value is not None else "      n/a"


def run(n: int = 10_000, n_vectors: int = 2000, batch: int | None = None, console: Console | None = None,
        output: Path | None = None) -> dict[str, Any]:
    console = wide(console or Console())
    info = machine()
    n_vectors = min(n_vectors, n)
    console.print(f"[bold]projection throughput[/bold]: {n} events (vectors: {n_vectors})")
    console.print(machine_line(info))
    texts, _ = memory_texts(n, sentences(min(n, 5000)))
    rows: list[dict[str, Any]] = []
    with start_stack() as stack:
        from infra.db import get_engine
        from infra.embedding import get_embedder
        from infra.settings import get_settings

        engine = get_engine()
        settings = get_settings()
        batch = batch or settings.projection_batch_size
        embedder = get_embedder(settings.embedding_model)
        embedder.warm()
        embedder.encode(texts[-64:])  # first batches at full size are slower: warm those too
        rates = []
        repeated = texts * (768 // len(texts) + 1)
        for i in range(3):  # the median of three passes: other work on a small machine makes single passes noisy
            sample = repeated[i * 256:(i + 1) * 256]
            t0 = time.perf_counter()
            embedder.encode(sample)
            rates.append(len(sample) / (time.perf_counter() - t0))
        model_rate = sorted(rates)[1]
        console.print(f"  model alone: {model_rate:,.0f} texts/s (batch 32, median of 3 passes of 256 texts: "
                      f"{', '.join(f'{r:,.0f}' for r in rates)})")

        append_memories(engine, "bench", texts[:n_vectors], agents=100, total=n, via="log")
        applied, seconds = project(engine, "vectors", batch)
        rows.append({"projector": "vectors (cold: embeds every text)", "events": applied, "seconds": seconds})
        _reset(engine, "vectors", "memory_vectors")
        applied, seconds = project(engine, "vectors", batch)
        rows.append({"projector": "vectors (warm: embedding cache hits)", "events": applied, "seconds": seconds})

        append_memories(engine, "bench", texts[n_vectors:], agents=100, offset=n_vectors, total=n, via="log")
        for name in [p for p in projector_names() if p != "vectors"]:
            applied, seconds = project(engine, name, batch)
            rows.append({"projector": name, "events": applied, "seconds": seconds})
        for row in rows:
            # a projection with no event to apply (one of types these events are not) has no rate
            row["events_per_s"] = round(row["events"] / row["seconds"], 1) if row["events"] else None
            row["seconds"] = round(row["seconds"], 3)
            console.print(f"  {row['projector']:38} {row['events']:>7} events in {row['seconds']:7.2f}s: "
                          f"{_rate(row['events_per_s'])} events/s")

    table = Table(title=f"Projection throughput (catch_up, batch {batch})")
    for col in ("projector", "events", "seconds", "events/s"):
        table.add_column(col, justify="left" if col == "projector" else "right")
    for r in rows:
        table.add_row(r["projector"], f"{r['events']:,}", f"{r['seconds']:.2f}", _rate(r["events_per_s"]))
    console.print(table)
    result = {"bench": "projection", "n": n, "n_vectors": n_vectors, "batch": batch, "machine": info,
              "database": stack["database"], "model": settings.embedding_model,
              "model_texts_per_s": round(model_rate, 1), "rows": rows,
              "notes": "vectors cold = model + projector; warm = the same events replayed with every text in the "
                       "embedding cache (what a rebuild costs)."}
    path = save_result("projection", result, output)
    console.print(f"saved {path}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="events for the memories and keyword projectors")
    parser.add_argument("--n-vectors", type=int, default=2000, help="events for the vectors projector")
    parser.add_argument("--batch", type=int, help="events per projection batch [ENGRAMLOG_PROJECTION_BATCH; 500]")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    run(args.n, args.n_vectors, args.batch, output=args.output)


if __name__ == "__main__":
    main()
