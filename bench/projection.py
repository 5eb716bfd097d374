"""Projection throughput: projections.runner.catch_up on MemoryRecorded events, per projector.

- vectors, cold: the first --n-vectors events (distinct texts), every text embedded by all-MiniLM-L6-v2 on the
  CPU (this is the embedding cost; ~150-240 texts/s on 2 cores, so a few thousand events are enough);
- vectors, warm: the same events projected again from scratch (table emptied, checkpoint reset): every text
  is found in the embedding cache, as in a rebuild or a replay, so this is the projector's own cost;
- memories and keyword (BM25 postings), and any other registered projection: all --n events.
The events are appended with eventstore.append alone (no write-path work), so each projector's cost is its own.
The raw model throughput (texts/s at the embedder's batch size) is measured on 3 x 256 of the texts for reference.

    python -m bench.projection [--n 10000] [--n-vectors 2000] [--batch 500] [--output FILE]

Scaling by log size (`--sizes`): does a projector's speed fall as the log grows? For each size N (ascending, on
one growing log of MemoryRecorded events): the log is grown to N - --window events and every projection caught
up (untimed); then --window more events are appended and each projector's catch-up over them is timed (its
rate at log size N); a projector with nothing to apply is timed for one empty batch (the cost of a poll, which
must not grow with the log either), and the memories projector's log read alone is timed for one batch from
position 0 (what every batch of the old read cost: a sort of the whole log past the checkpoint); then each
projection is rebuilt over the whole log (rebuild rate); then --window / 20 MemoryReinforced events (content
changes of memories picked across the whole log, as the governor appends for repeats) are appended and each
projector's catch-up over them is timed (the keyword projector re-indexes each memory). Every rate is given
per second of wall clock and per CPU second (this process and the PostgreSQL server's processes together): on
CPUs shared with other work the wall clock of two sizes measured minutes apart differs by the load, the CPU
seconds much less. The figures are printed side by side, each size's as a ratio of the smallest size's (target:
the largest size's rate within 2x of the smallest's). vectors is left out of this mode: its cost is the
embedding model's, measured above.

    python -m bench.projection --sizes 10000 200000 [--window 10000] [--batch 500] [--output FILE]
    python -m bench.projection --sizes 10000 1000000   # issue 7's figure: ~1 hour on 2 shared cores, ~2 GB disk

Worker processes (`--workers`): the same events of --tenants tenants projected by 1, 2, ... processes sharing the
projections' partitions, wall clock and CPU seconds (bench/projection_workers.py).

    python -m bench.projection --workers 1 2 [--n 10000] [--tenants 16]
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.common import machine, machine_line, save_result, server_cpu_seconds, start_stack, wide
from bench.corpus import append_memories, memory_texts, project, projector_names, sentences


def _reset(engine: Any, name: str) -> None:
    from sqlalchemy import text

    from projections.registry import get_projector

    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {', '.join(get_projector(name).tables)}"))
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
        batch = batch or settings.projections.projection_batch_size
        embedder = get_embedder(settings.embedding.embedding_model)
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
        _reset(engine, "vectors")
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
              "database": stack["database"], "model": settings.embedding.embedding_model,
              "model_texts_per_s": round(model_rate, 1), "rows": rows,
              "notes": "vectors cold = model + projector; warm = the same events replayed with every text in the "
                       "embedding cache (what a rebuild costs)."}
    path = save_result("projection", result, output)
    console.print(f"saved {path}")
    return result


def _empty_batch_ms(engine: Any, name: str, batch: int, repeat: int = 5) -> float:
    """Median time of one run_batch that finds nothing to apply (a poll)."""
    from projections.registry import get_projector
    from projections.runner import run_batch

    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run_batch(engine, get_projector(name), batch)
        times.append((time.perf_counter() - t0) * 1000)
    return sorted(times)[len(times) // 2]


def _read_batch_ms(engine: Any, name: str, batch: int, after: Any, repeat: int = 5) -> float:
    """Median time of the projector's gap-safe read of one batch after `after` (no apply, no checkpoint)."""
    from eventstore.read import read_after
    from projections.registry import get_projector

    times = []
    with engine.connect() as conn:
        for _ in range(repeat):
            t0 = time.perf_counter()
            read_after(conn, after, get_projector(name).types, batch)
            times.append((time.perf_counter() - t0) * 1000)
    return sorted(times)[len(times) // 2]


def _cpu_seconds(engine: Any) -> float | None:
    """CPU seconds used so far by this process and the PostgreSQL server (None when the server is elsewhere).
    Other engineers' work on shared CPUs slows the wall clock, not this: a rate per CPU second compares sizes
    measured minutes apart under different loads. A server process that ends between two readings (an autovacuum
    worker) takes its seconds with it, so this slightly undercounts."""
    server = server_cpu_seconds(engine)
    return None if server is None else time.process_time() + server


def _timed(engine: Any, work: Any) -> tuple[Any, float, float | None]:
    """(work's answer, wall seconds, CPU seconds of this process and the server or None)."""
    cpu0, t0 = _cpu_seconds(engine), time.perf_counter()
    answer = work()
    wall, cpu1 = time.perf_counter() - t0, _cpu_seconds(engine)
    return answer, wall, (cpu1 - cpu0) if cpu0 is not None and cpu1 is not None else None


def _append_reinforcements(engine: Any, n: int, seed: int) -> int:
    """MemoryReinforced events for n memories of the log (picked from a random memory id on), each adding a word to
    its content, as the governor appends for a repeat: the keyword projector re-indexes each one (reads and deletes
    its old postings by memory). Answers how many were appended."""
    import uuid

    from sqlalchemy import text

    from domain.events import NewEvent, memory_stream, validate_payload
    from eventstore.append import append

    start = uuid.UUID(int=random.Random(seed).getrandbits(128))
    with engine.begin() as conn:
        rows = conn.execute(text("SELECT memory_id, content FROM memories WHERE tenant = 'bench' AND memory_id > :s "
                                 "ORDER BY memory_id LIMIT :n"), {"s": start, "n": n}).all()
        events = [NewEvent("MemoryReinforced", memory_stream(memory_id), validate_payload("MemoryReinforced", {
            "memory_id": str(memory_id), "observation_id": str(uuid.uuid4()), "similarity": 0.97,
            "merged_content": f"{content} Again, reinforced {seed}.", "confidence": 0.6}))
            for memory_id, content in rows]
        append(conn, "bench", events, {"actor": "system:governor", "source": "bench"})
    return len(events)


def _per_s(events: int, seconds: float | None) -> float | None:
    return round(events / seconds, 1) if events and seconds else None


def run_scaling(sizes: list[int], window: int = 10_000, batch: int | None = None, rebuild_batch: int = 1000,
                console: Console | None = None, output: Path | None = None) -> dict[str, Any]:
    """Projection and rebuild rates at each log size, side by side (see the module's docstring)."""
    from bench.corpus import NAMES

    console = wide(console or Console())
    info = machine()
    sizes = sorted(set(sizes))
    window = min(window, sizes[0])
    biggest = sizes[-1]
    console.print(f"[bold]projection and rebuild rates by log size[/bold]: {', '.join(f'{n:,}' for n in sizes)} "
                  f"events (timed window {window:,})")
    console.print(machine_line(info))
    texts, _ = memory_texts(biggest, sentences(max(5000, -(-biggest // len(NAMES)))))
    names = [p for p in projector_names() if p != "vectors"]
    by_size: list[dict[str, Any]] = []
    started_all = time.perf_counter()
    with start_stack() as stack:
        from infra.db import get_engine
        from infra.settings import get_settings
        from projections.rebuild import rebuild
        from projections.registry import get_projector

        engine = get_engine()
        batch = batch or get_settings().projections.projection_batch_size
        written = reinforced = 0
        reinforcements = max(1, window // 20)
        for size in sizes:
            t0 = time.perf_counter()
            append_memories(engine, "bench", texts[written:size - window], agents=100, offset=written,
                            total=biggest, via="log")
            for name in names:
                project(engine, name, batch)
            grow_s = time.perf_counter() - t0
            append_memories(engine, "bench", texts[size - window:size], agents=100, offset=size - window,
                            total=biggest, via="log")
            written = size
            point: dict[str, Any] = {"size": size, "grow_s": round(grow_s, 1), "projection": {},
                                     "projection_cpu": {}, "poll_ms": {}, "reinforce": {}, "reinforce_cpu": {},
                                     "rebuild": {}, "rebuild_cpu": {}}
            for name in names:
                applied, wall, cpu = _timed(engine, lambda name=name: project(engine, name, batch)[0])
                if applied:
                    point["projection"][name] = _per_s(applied, wall)
                    point["projection_cpu"][name] = _per_s(applied, cpu)
                else:
                    point["poll_ms"][name] = round(_empty_batch_ms(engine, name, batch), 2)
            # The log read alone, from the start of the log (as a rebuild's first batch) and near its head.
            from eventstore.read import Checkpoint

            point["read_from_0_ms"] = {"memories": round(_read_batch_ms(engine, "memories", batch, Checkpoint()), 2)}
            for name in names:
                _, wall, cpu = _timed(engine, lambda name=name: rebuild(engine, get_projector(name), rebuild_batch))
                point["rebuild"][name] = _per_s(size + reinforced, wall)
                point["rebuild_cpu"][name] = _per_s(size + reinforced, cpu)
            # Then content changes (the governor's MemoryReinforced): each re-indexes a memory of the whole log.
            # After the rebuild, so that every size's rebuild replays a log of recordings (holding only the few
            # reinforcements of the smaller sizes), as the smallest size's does.
            reinforced += _append_reinforcements(engine, reinforcements, seed=size)
            for name in names:
                applied, wall, cpu = _timed(engine, lambda name=name: project(engine, name, batch)[0])
                if applied:
                    point["reinforce"][name] = _per_s(applied, wall)
                    point["reinforce_cpu"][name] = _per_s(applied, cpu)
            point["loadavg_1m"] = machine().get("loadavg_1m_5m_15m", [None])[0]
            by_size.append(point)
            console.print(f"  {size:>9,} events: projection {point['projection']} events/s "
                          f"(per CPU s {point['projection_cpu']}); reinforce {point['reinforce']}; "
                          f"empty batch {point['poll_ms']} ms; rebuild {point['rebuild']} events/s "
                          f"(per CPU s {point['rebuild_cpu']}); load {point['loadavg_1m']}")
    base = by_size[0]
    table = Table(title=f"Rates by log size (catch-up of the last {window:,} events, batch {batch}; "
                        f"rebuild over the whole log, batch {rebuild_batch})")
    table.add_column("measure")
    for p in by_size:
        table.add_column(f"{p['size']:,}", justify="right")
    table.add_column(f"{by_size[-1]['size']:,} / {base['size']:,}", justify="right")
    ratios: dict[str, float] = {}
    for kind, unit in (("projection", "events/s"), ("projection_cpu", "events/CPU s"), ("reinforce", "events/s"),
                       ("reinforce_cpu", "events/CPU s"), ("rebuild", "events/s"), ("rebuild_cpu", "events/CPU s"),
                       ("poll_ms", "ms"), ("read_from_0_ms", "ms")):
        for name in names:
            # A rebuild's rate is shown for the projections that had events to apply (the others replay nothing).
            if name not in base.get(kind, {}) or (kind.startswith("rebuild") and name not in base["projection"]):
                continue
            values = [p[kind].get(name) for p in by_size]
            ratio = (values[-1] / values[0]) if values[0] and values[-1] else None
            if ratio is not None:
                ratios[f"{kind}.{name}"] = round(ratio, 2)
            label = {"projection": "project", "projection_cpu": "project", "reinforce": "reinforce",
                     "reinforce_cpu": "reinforce", "rebuild": "rebuild", "rebuild_cpu": "rebuild",
                     "poll_ms": "empty batch", "read_from_0_ms": "read 1 batch from position 0"}[kind]
            table.add_row(f"{label} {name} ({unit})", *(f"{v:,.1f}" if v is not None else "n/a" for v in values),
                          f"{ratio:.2f}x" if ratio is not None else "n/a")
    console.print(table)
    result = {"bench": "projection-scaling", "sizes": sizes, "window": window, "batch": batch,
              "rebuild_batch": rebuild_batch, "machine": info, "database": stack["database"], "by_size": by_size,
              "ratios_largest_to_smallest": ratios, "seconds": round(time.perf_counter() - started_all, 1),
              "notes": "rates: events/s (higher is better); empty batch: ms per poll with nothing to apply (lower "
                       "is better). Ratio = largest size's figure / smallest size's."}
    path = save_result("projection-scaling", result, output)
    console.print(f"saved {path}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="events for the memories and keyword projectors")
    parser.add_argument("--n-vectors", type=int, default=2000, help="events for the vectors projector")
    parser.add_argument("--batch", type=int, help="events per projection batch [ENGRAMLOG_PROJECTION_BATCH; 500]")
    parser.add_argument("--sizes", type=int, nargs="+",
                        help="log sizes to compare projection and rebuild rates at (e.g. 10000 200000)")
    parser.add_argument("--window", type=int, default=10_000, help="with --sizes: events timed at each size")
    parser.add_argument("--workers", type=int, nargs="+",
                        help="worker process counts to compare (e.g. 1 2; bench/projection_workers.py)")
    parser.add_argument("--tenants", type=int, default=16, help="with --workers: tenants the events are spread over")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    if args.workers:
        from bench.projection_workers import run as run_workers

        run_workers(args.workers, args.n, args.tenants, args.batch, output=args.output)
    elif args.sizes:
        run_scaling(args.sizes, args.window, args.batch, output=args.output)
    else:
        run(args.n, args.n_vectors, args.batch, output=args.output)


if __name__ == "__main__":
    main()
