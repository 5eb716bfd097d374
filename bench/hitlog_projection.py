"""What the worker spends on one recall: each recall/multi appends a RecallServed that six projectors apply (hits,
activity, edges, references, lazy vectors), and on the real stack that work shares the cores with the next recall.

In process, sequential, on a store that bench/recall_multi.py loaded (DATABASE_URL and REDIS_URL of it; run that
first, e.g. against a PostgreSQL you keep): per query of its mix, recall/multi with the default fan-out, then
`workers.actors.catch_up_all` as a wake-up runs it, timed alone: the worker's Python CPU, PostgreSQL's CPU
(bench/common.py server_cpu_seconds: the server must run on this machine), and the statements it sent.

    DATABASE_URL=... REDIS_URL=... python -m bench.hitlog_projection [--queries 60] [--output FILE]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from bench.common import machine, machine_line, save_result, server_cpu_seconds

WARMUP = 10


def run(args: argparse.Namespace) -> dict[str, Any]:
    from sqlalchemy import event

    from bench.recall_multi import query_mix
    from infra.db import get_engine
    from infra.embedding import get_embedder
    from infra.logging import configure_logging
    from infra.settings import get_settings
    from recall.multi import MultiRequest, recall_multi
    from recall.scope import Scope
    from workers.actors import catch_up_all

    configure_logging("warning")
    settings, engine = get_settings(), get_engine()
    embedder = get_embedder(settings.embedding.embedding_model)
    queries = query_mix(args.queries)
    for q in queries:
        embedder.query_vector("default", q)  # the recall's own cost is not what is measured here
    if server_cpu_seconds(engine) is None:
        raise SystemExit("the PostgreSQL server is not on this machine: its CPU cannot be read")
    sent = [0]

    def count(*_: Any) -> None:
        sent[0] += 1

    catch_up_all()
    for q in queries[:WARMUP]:
        recall_multi(engine, embedder, settings, MultiRequest(Scope("default"), q), {})
        catch_up_all()
    event.listen(engine, "before_cursor_execute", count)
    python_s = postgres_s = 0.0
    statements = 0
    for q in queries:
        recall_multi(engine, embedder, settings, MultiRequest(Scope("default"), q), {})
        pg = server_cpu_seconds(engine) or 0.0
        cpu, before = time.process_time(), sent[0]
        catch_up_all()
        python_s += time.process_time() - cpu
        statements += sent[0] - before
        postgres_s += (server_cpu_seconds(engine) or 0.0) - pg
    event.remove(engine, "before_cursor_execute", count)
    n = len(queries)
    per = {"python_cpu_ms": round(python_s / n * 1000, 1), "postgres_cpu_ms": round(postgres_s / n * 1000, 1),
           "statements": round(statements / n, 1)}
    print(f"per recall/multi's hit-log event, catch_up_all: Python CPU {per['python_cpu_ms']} ms, PostgreSQL CPU "
          f"{per['postgres_cpu_ms']} ms, {per['statements']} statements ({n} queries)", flush=True)
    return {"bench": "hitlog_projection", "machine": machine(), "queries": n, "per_recall": per,
            "path": "in process: recall.multi.recall_multi (default fan-out) then workers.actors.catch_up_all"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL"):
        raise SystemExit("set DATABASE_URL (and REDIS_URL) to a store bench.recall_multi loaded")
    print(machine_line(), flush=True)
    print(f"saved {save_result('hitlog-projection', run(args), args.output)}")


if __name__ == "__main__":
    main()
