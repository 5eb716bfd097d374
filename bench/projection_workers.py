"""Projection throughput with N worker processes sharing the projections (projections/partitions.py).

--n MemoryRecorded events of --tenants tenants (spread over the partitions by the tenant's hash) are appended to
the log; then for each worker count W: the projections named (--projections; default memories, keyword and
entities: the ones whose cost is the database and the projector, not the embedding model) are emptied and their
checkpoints removed, and W processes each run the projections' runner (projections.runner.catch_up with W
partitions, as a worker does) until every projection has reached the log's head. Timed: the wall clock from the
first process ready (its imports done) to the last one's end, and the CPU seconds of those processes (from ready
to end) and of the PostgreSQL server's processes together. Every run ends with the read models checked (one
memories row per event).

    python -m bench.projection --workers 1 2 [--n 20000] [--tenants 16] [--batch 500]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.common import machine, machine_line, save_result, server_cpu_seconds, start_stack, wide

DEFAULT_PROJECTIONS = ("memories", "keyword", "entities")
_MARK = "projection-workers: "  # a child's report line on its stdout, among whatever else it prints


def _marked(proc: subprocess.Popen[str]) -> dict[str, float]:
    """The child's next report line ({} when it ended without one)."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(_MARK):
            return dict(json.loads(line[len(_MARK):]))
    return {}


def _append(engine: Any, n: int, tenants: int, chunk: int = 1000) -> None:
    from domain.events import NewEvent, memory_stream
    from eventstore.append import append

    words = ["harbour", "lantern", "orchard", "violin", "glacier", "meadow", "copper", "falcon", "tundra", "velvet"]
    for start in range(0, n, chunk):
        by_tenant: dict[str, list[NewEvent]] = {}
        for i in range(start, min(n, start + chunk)):
            mid = uuid.uuid4()
            content = f"note {i} " + " ".join(words[(i * 7 + j * 3) % len(words)] for j in range(12)) + f" {i % 97}"
            by_tenant.setdefault(f"bench-{i % tenants}", []).append(NewEvent(
                type="MemoryRecorded", stream_id=memory_stream(mid), expected_version=0,
                data={"memory_id": str(mid), "content": content, "kind": "observation", "agent_id": f"a{i % 10}",
                      "project": None, "session_id": None, "tags": [], "metadata": {}}))
        with engine.begin() as conn:
            for tenant, events in by_tenant.items():
                append(conn, tenant, events, {"actor": "bench", "source": "bench"})


def _reset(engine: Any, names: list[str]) -> None:
    from sqlalchemy import text

    from projections.registry import get_projector

    with engine.begin() as conn:
        for name in names:
            tables = ", ".join(get_projector(name).tables)
            conn.execute(text(f"TRUNCATE {tables}"))
            conn.execute(text("DELETE FROM projection_checkpoints WHERE name = :n"), {"n": name})


def child(names: list[str], workers: int, batch: int) -> None:
    """One worker process: catch the projections up in `workers` partitions until all have reached the head."""
    from infra.db import get_engine
    from projections.registry import get_projector
    from projections.runner import catch_up, has_reached

    engine = get_engine()
    with engine.connect() as conn:
        from eventstore.read import head_position

        head = head_position(conn)
    pending = [get_projector(n) for n in names]
    print(_MARK + json.dumps({"start": time.time(), "cpu": time.process_time()}), flush=True)  # imports done
    while pending:
        for projector in pending:
            catch_up(engine, projector, batch, max_seconds=3600, partitions=workers)
        with engine.connect() as conn:
            pending = [p for p in pending if not has_reached(conn, p, head)]
        if pending:
            time.sleep(0.01)  # the rest is another process's batch in flight
    print(_MARK + json.dumps({"end": time.time(), "cpu": time.process_time()}), flush=True)


def _run_workers(engine: Any, names: list[str], workers: int, batch: int) -> dict[str, Any]:
    from sqlalchemy import text

    _reset(engine, names)
    procs = [subprocess.Popen([sys.executable, "-m", "bench.projection_workers", "--child", "--workers",
                               str(workers), "--batch", str(batch), "--projections", *names], env=os.environ.copy(),
                              stdout=subprocess.PIPE, text=True)
             for _ in range(workers)]
    # Timed from the first process ready (imports done) to the last one's end; their CPU in that span, and the
    # server's from when every process is ready (a process ready late has applied nothing before it).
    ready = [_marked(p) for p in procs]
    server0 = server_cpu_seconds(engine)
    ends = [_marked(p) for p in procs]
    codes = [p.wait() for p in procs]
    server1 = server_cpu_seconds(engine)
    if any(codes) or not all(ends):
        raise RuntimeError(f"a worker process failed: exit codes {codes}")
    wall = max(e["end"] for e in ends) - min(r["start"] for r in ready)
    with engine.connect() as conn:
        events = conn.execute(text("SELECT count(*) FROM events WHERE type = 'MemoryRecorded'")).scalar_one()
        memories = conn.execute(text("SELECT count(*) FROM memories")).scalar_one()
    if "memories" in names and memories != events:
        raise RuntimeError(f"{memories} memories rows for {events} events")
    cpu = sum(e["cpu"] - r["cpu"] for r, e in zip(ready, ends, strict=True)) + (
        (server1 - server0) if server0 is not None and server1 is not None else 0.0)
    applied = events * len(names)
    return {"workers": workers, "events": events, "projections": names, "applied": applied,
            "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "events_per_s": round(applied / wall, 1),
            "events_per_cpu_s": round(applied / cpu, 1) if cpu else None,
            "server_cpu_counted": server0 is not None}


def run(workers: list[int], n: int = 20_000, tenants: int = 16, batch: int | None = None,
        projections: list[str] | None = None, console: Console | None = None,
        output: Path | None = None) -> dict[str, Any]:
    console = wide(console or Console())
    info = machine()
    names = list(projections or DEFAULT_PROJECTIONS)
    console.print(f"[bold]projection throughput by worker processes[/bold]: {n:,} events of {tenants} tenants, "
                  f"projections {', '.join(names)}")
    console.print(machine_line(info))
    rows: list[dict[str, Any]] = []
    with start_stack() as stack:
        from infra.db import get_engine
        from infra.settings import get_settings

        engine = get_engine()
        batch = batch or get_settings().projections.projection_batch_size
        _append(engine, n, tenants)
        for w in workers:
            row = _run_workers(engine, names, w, batch)
            row["loadavg_1m"] = machine().get("loadavg_1m_5m_15m", [None])[0]
            rows.append(row)
            console.print(f"  {w} worker(s): {row['applied']:,} applications in {row['wall_s']:.1f} s wall, "
                          f"{row['cpu_s']:.1f} CPU s: {row['events_per_s']:,.0f}/s, "
                          f"{row['events_per_cpu_s'] or 0:,.0f}/CPU s (load {row['loadavg_1m']})")
    table = Table(title=f"Projection throughput by workers ({n:,} events x {len(names)} projections, batch {batch})")
    for col in ("workers", "wall s", "CPU s", "events/s", "events/CPU s", "vs 1 worker"):
        table.add_column(col, justify="right")
    base = rows[0]["events_per_s"] if rows else None
    for r in rows:
        table.add_row(str(r["workers"]), f"{r['wall_s']:.1f}", f"{r['cpu_s']:.1f}", f"{r['events_per_s']:,.0f}",
                      f"{r['events_per_cpu_s'] or 0:,.0f}", f"{r['events_per_s'] / base:.2f}x" if base else "n/a")
    console.print(table)
    result = {"bench": "projection-workers", "n": n, "tenants": tenants, "batch": batch, "projections": names,
              "machine": info, "database": stack["database"], "rows": rows,
              "notes": "events = applications (events x projections). CPU s = the worker processes' and the "
                       "PostgreSQL server's together."}
    path = save_result("projection-workers", result, output)
    console.print(f"saved {path}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--tenants", type=int, default=16)
    parser.add_argument("--batch", type=int)
    parser.add_argument("--projections", nargs="+")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    if args.child:
        child(args.projections or list(DEFAULT_PROJECTIONS), args.workers[0], args.batch or 500)
    else:
        run(args.workers, args.n, args.tenants, args.batch, args.projections, output=args.output)


if __name__ == "__main__":
    main()
