"""What the worker beside the API costs a recall: the default fan-out over HTTP on the real stack, with the worker
running or paused, alternated query by query.

Each recall/multi appends a RecallServed that the worker applies about hitlog_wake_delay_ms later, on the cores the
next recall runs on; on a store whose lazy vectors are still being filled (a fresh one), that includes embedding the
sections and transcript chunks the recall returned for the first time. Before each query the worker's processes are
either left running or stopped (SIGSTOP, then SIGCONT before the next running one): the difference is what the
worker's work costs the read path. Also reported: the worker's CPU per recall while it ran.

A diagnostic, not the figure users see: with the worker paused the hit-log's effects (activation, references, lazy
vectors) wait. Run it on a store bench/recall_multi.py loaded (its DATABASE_URL and REDIS_URL; the same sizes):

    DATABASE_URL=... REDIS_URL=... python -m bench.worker_contention [--memories 30000 --sections 10000
        --messages 100000] [--queries 300] [--skip 0] [--output FILE]

`--skip` leaves out the first queries of the bench's mix (a store that answered them already has their lazy vectors).
"""

from __future__ import annotations

import argparse
import os
import signal
import time
from pathlib import Path
from typing import Any

from bench.common import latency_stats, machine, machine_line, processes_cpu_seconds, save_result


def run(args: argparse.Namespace) -> dict[str, Any]:
    import psutil
    from engramlog_client import Engramlog

    from bench.recall_multi import query_mix
    from bench.sessions_recall import real_stack

    qs = query_mix(args.skip + args.queries, args.memories, args.messages, args.sections)[args.skip:]
    served: dict[str, list[float]] = {"running": [], "paused": []}
    wall: dict[str, list[float]] = {"running": [], "paused": []}
    worker_ms = 0.0
    with real_stack() as where:
        workers = [c for c in psutil.Process().children(recursive=True) if "dramatiq" in " ".join(c.cmdline())]
        client = Engramlog(where["api_url"], timeout=120)
        for q in ("warming up", "warming up again"):
            client.recall_multi(q)
        try:
            for i, q in enumerate(qs):
                arm = "running" if i % 2 == 0 else "paused"
                for w in workers:
                    os.kill(w.pid, signal.SIGCONT if arm == "running" else signal.SIGSTOP)
                before = processes_cpu_seconds(workers)
                started = time.perf_counter()
                answer = client.recall_multi(q)
                wall[arm].append((time.perf_counter() - started) * 1000)
                served[arm].append(answer.latency_ms)
                worker_ms += (processes_cpu_seconds(workers) - before) * 1000
        finally:
            for w in workers:
                os.kill(w.pid, signal.SIGCONT)
    return {"machine": machine(), "queries": len(qs), "skip": args.skip,
            "sizes": {"memories": args.memories, "sections": args.sections, "messages": args.messages},
            **{arm: {"served_ms": latency_stats(served[arm]), "wall_ms": latency_stats(wall[arm])} for arm in served},
            "worker_cpu_ms_per_running_recall": round(worker_ms / max(1, len(served["running"])), 1),
            "loadavg_1m_5m_15m": [round(x, 2) for x in os.getloadavg()]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=3000)
    parser.add_argument("--sections", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--skip", type=int, default=0)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    result = run(args)
    print(machine_line(result["machine"]))
    for arm in ("running", "paused"):
        s = result[arm]["served_ms"]
        w = result[arm]["wall_ms"]
        print(f"worker {arm:8s}: served p50 {s['p50']} ms p95 {s['p95']} ms; client wall p50 {w['p50']} p95 {w['p95']}")
    print(f"the worker's CPU per recall while it ran: {result['worker_cpu_ms_per_running_recall']} ms")
    print("saved", save_result("worker-contention", result, args.output))


if __name__ == "__main__":
    main()
