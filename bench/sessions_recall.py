"""Sessions recall latency: p50/p95 of SessionsDomain.search at N messages (synthetic sessions of 200 messages,
5-60 words each drawn from a Zipf vocabulary of 20k terms; queries: 3 words from the same distribution).

    .venv/bin/python -m bench.sessions_recall --messages 10000 100000

Starts its own embedded PostgreSQL in a temporary folder (no Redis, no worker: the projector is caught up here).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

VOCABULARY = [f"term{i}" for i in range(20_000)]
ZIPF = [1 / (i + 1) for i in range(len(VOCABULARY))]  # word frequencies as in text: a few common, a long tail


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="engramlog-bench-sessions-"))
    os.environ["ENGRAMLOG_DATA_DIR"] = str(data_dir)
    from stack.postgres import EmbeddedPostgres

    pg = EmbeddedPostgres(data_dir)
    os.environ["DATABASE_URL"] = pg.url
    pg.start()
    try:
        from migrations.runner import upgrade_to_head

        upgrade_to_head(pg.url)
        run(args.messages, args.queries)
    finally:
        pg.stop()


def run(sizes: list[int], queries: int) -> None:
    from domain.privacy import NO_POLICY
    from infra.db import get_engine
    from projections.runner import catch_up
    from projections.sessions import SessionsProjector
    from recall.domains.base import DomainQuery
    from recall.domains.sessions import SessionsDomain
    from recall.scope import Scope
    from services.sessions import append_messages

    engine, rng, written = get_engine(), random.Random(7), 0
    tenant = "bench"
    for size in sorted(sizes):
        started = time.perf_counter()
        while written < size:
            session = f"s{written // 200}"
            batch = [{"role": ("user", "assistant", "tool")[i % 3],
                      "content": " ".join(rng.choices(VOCABULARY, ZIPF, k=rng.randint(5, 60)))} for i in range(200)]
            append_messages(engine, tenant, session, batch, {"source": "bench"})
            written += len(batch)
        catch_up(engine, SessionsProjector(), 2000, max_seconds=3600)
        load_s = time.perf_counter() - started
        domain, latencies = SessionsDomain(), []
        for _ in range(queries):
            q = " ".join(rng.choices(VOCABULARY, ZIPF, k=3))
            t = time.perf_counter()
            domain.search(engine, DomainQuery(Scope(tenant), q, 10, datetime.now(UTC), NO_POLICY))
            latencies.append((time.perf_counter() - t) * 1000)
        latencies.sort()
        print(f"messages={written} load+project_s={load_s:.1f} p50_ms={statistics.median(latencies):.1f} "
              f"p95_ms={latencies[int(len(latencies) * 0.95) - 1]:.1f} queries={queries} k=10")


if __name__ == "__main__":
    main()
