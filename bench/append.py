"""Append throughput: one event per transaction, and batches of 100 and 1,000.

Two layers are measured on the same MemoryRecorded events (~14-word content, tags, metadata, a producer
idempotency key each):
- `log`: eventstore.append in the caller's transaction (the event log alone: idempotency-key lookup, stream
  heads, one INSERT ... SELECT FROM unnest round trip);
- `service`: services.append_events (what POST /v1/events and the memories API run: payload validation and
  upcasting, the content limit, the append, and the Dramatiq wake-up sent to Redis after commit).
Each mode writes to its own tenant on one connection at a time (a single producer). The embedding cache holds
every text beforehand (jittered copies of real pool embeddings, as in bench.recall), so a write path that
embeds at write time is measured without the model's cost.

    python -m bench.append [--n 10000] [--output FILE]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.common import machine, machine_line, percentile, save_result, start_stack, wide
from bench.corpus import memory_texts, occurred_at, pool_embeddings, seed_embedding_cache, sentences


def _log_mode(engine: Any, tenant: str, texts: list[str], batch: int) -> dict[str, Any]:
    from bench.corpus import memory_event
    from eventstore.append import append

    metadata = {"actor": "bench", "source": "bench"}
    n = len(texts)
    # Events are built (and validated) before the clock starts: this mode measures the log alone.
    events = [memory_event(t, "agent-0", occurred_at(i, n), i, key_prefix=tenant) for i, t in enumerate(texts)]
    tx_ms: list[float] = []
    started = time.perf_counter()
    for start in range(0, n, batch):
        t0 = time.perf_counter()
        with engine.begin() as conn:
            append(conn, tenant, events[start:start + batch], metadata)
        tx_ms.append((time.perf_counter() - t0) * 1000)
    seconds = time.perf_counter() - started
    return _figures("log", batch, n, seconds, tx_ms)


def _service_mode(engine: Any, tenant: str, texts: list[str], batch: int) -> dict[str, Any]:
    from services.append_events import EventInput, append_events

    metadata = {"actor": "bench", "source": "bench"}
    n = len(texts)
    items = [EventInput(type="MemoryRecorded", occurred_at=occurred_at(i, n), idempotency_key=f"{tenant}:{i}",
                        data={"memory_id": _uuid(tenant, i), "content": t, "kind": "observation",
                              "agent_id": "agent-0", "tags": ["bench"], "metadata": {"source": "bench", "i": i}})
             for i, t in enumerate(texts)]
    tx_ms: list[float] = []
    started = time.perf_counter()
    for start in range(0, n, batch):
        t0 = time.perf_counter()
        append_events(engine, tenant, items[start:start + batch], metadata)
        tx_ms.append((time.perf_counter() - t0) * 1000)
    seconds = time.perf_counter() - started
    return _figures("service", batch, n, seconds, tx_ms)


def _uuid(tenant: str, i: int) -> str:
    import uuid

    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"bench:{tenant}:{i}"))


def _figures(layer: str, batch: int, n: int, seconds: float, tx_ms: list[float]) -> dict[str, Any]:
    return {"layer": layer, "batch": batch, "events": n, "seconds": round(seconds, 3),
            "events_per_s": round(n / seconds, 1), "transactions": len(tx_ms),
            "tx_p50_ms": round(percentile(tx_ms, 50), 3), "tx_p95_ms": round(percentile(tx_ms, 95), 3)}


def run(n: int = 10_000, batches: tuple[int, ...] = (1, 100, 1000), console: Console | None = None,
        output: Path | None = None) -> dict[str, Any]:
    console = wide(console or Console())
    info = machine()
    console.print(f"[bold]append throughput[/bold]: {n} events per mode")
    console.print(machine_line(info))
    pool = sentences(min(n, 5000))
    texts, pool_index = memory_texts(n, pool)
    rows = []
    with start_stack() as stack:
        from infra.db import get_engine
        from infra.settings import get_settings

        engine = get_engine()
        # If the write path embeds (or looks embeddings up), let it find every text in the embedding cache, as
        # for a text seen before: this measures the write path, not the model (bench.projection measures that).
        model = get_settings().embedding.embedding_model
        pool_vectors, _ = pool_embeddings(pool, model)
        tenants = [f"bench-{layer}-{batch}" for layer in ("log", "service") for batch in batches]
        for tenant in ["bench-warmup-service", *tenants]:  # the cache is each tenant's own
            seed_embedding_cache(engine, tenant, model, texts, pool_index, pool_vectors)
        # Warm the connection pool and the statement paths outside the measurement.
        _log_mode(engine, "bench-warmup-log", texts[:200], 100)
        _service_mode(engine, "bench-warmup-service", texts[:200], 100)
        for layer, fn in (("log", _log_mode), ("service", _service_mode)):
            for batch in batches:
                row = fn(engine, f"bench-{layer}-{batch}", texts, batch)
                rows.append(row)
                console.print(f"  {layer:7} batch {batch:>5}: {row['events_per_s']:>9,.0f} events/s "
                              f"(tx p50 {row['tx_p50_ms']:.2f} ms, p95 {row['tx_p95_ms']:.2f} ms)")

    table = Table(title=f"Append throughput ({n:,} MemoryRecorded events per row, 1 producer)")
    for col in ("layer", "events / tx", "events/s", "tx p50", "tx p95", "seconds"):
        table.add_column(col, justify="left" if col == "layer" else "right")
    for r in rows:
        table.add_row(r["layer"], str(r["batch"]), f"{r['events_per_s']:,.0f}", f"{r['tx_p50_ms']:.2f} ms",
                      f"{r['tx_p95_ms']:.2f} ms", f"{r['seconds']:.2f}")
    console.print(table)
    result = {"bench": "append", "n": n, "machine": info, "database": stack["database"], "rows": rows,
              "notes": "log = eventstore.append with events prebuilt; service = services.append_events "
                       "(validation + append + Dramatiq wake-up to Redis). Each event carries an idempotency key. "
                       "Embedding cache pre-seeded for every text."}
    path = save_result("append", result, output)
    console.print(f"saved {path}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="events per mode")
    parser.add_argument("--batches", type=lambda s: tuple(int(x) for x in s.split(",")), default=(1, 100, 1000),
                        help="events per transaction, comma-separated")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    run(args.n, args.batches, output=args.output)


if __name__ == "__main__":
    main()
