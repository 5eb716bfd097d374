"""Sessions recall latency at N messages on the path users take: the real stack (`engramlog up`'s launcher:
embedded PostgreSQL + pgvector, Redis, a Dramatiq worker, uvicorn serving the API on a free loopback port, default
settings), messages appended over HTTP (POST /v1/sessions/{id}/messages through engramlog_client, one session of
200 messages per call) and projected by the worker, then POST /v1/recall/multi with domains ["sessions"], k = 10.

The corpus: sessions of 200 messages (user, assistant, tool in turn), 5-60 words each drawn from a Zipf vocabulary
of 20k terms (a few terms in most messages, a long tail); sessions' created_at spread over the last 90 days.
Queries: 3 words from the same distribution (so most queries hold a term most messages share: the cost of
BM25 grows with the postings its terms touch). Reported per size: the append rate over HTTP, how long the worker
took to catch up after the last append, and recall wall time (client) and the server's latency_ms, p50/p95,
with the load average (other work shares the CPUs).

    .venv/bin/python -m bench.sessions_recall --messages 10000 100000 [--queries 200] [--profile]

--profile: per size, the sessions domain's steps timed in process (has_data, BM25, rows, windows), the same BM25
read from every posting (its time, and how much of the default plan's top 10 and top n it shares, and the share
of queries answered identically) and EXPLAIN (ANALYZE, BUFFERS) of the BM25 statement for the slowest of a few
queries.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import latency_stats, machine, machine_line, save_result, start_stack, wait_projected

VOCABULARY = [f"term{i}" for i in range(20_000)]
ZIPF = [1 / (i + 1) for i in range(len(VOCABULARY))]  # word frequencies as in text: a few common, a long tail
SESSION_SIZE = 200
WARMUP = 10


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def real_stack() -> Iterator[dict[str, Any]]:
    """start_stack's PostgreSQL and Redis, then the launcher `engramlog up` runs (stack/up.py Stack: a Dramatiq
    worker on the projections, ingest and lifecycle queues, uvicorn with the API) on a free port, default
    settings otherwise. Yields {"api_url", "database_url", ...}."""
    with start_stack() as where:
        os.environ["ENGRAMLOG_PORT"] = str(_free_port())
        from infra.settings import Settings
        from stack.up import Stack

        stack = Stack(Settings())  # DATABASE_URL / REDIS_URL set: the stack starts only the worker and the API
        stack.start()
        try:
            yield {**where, "api_url": stack.api_url}
        finally:
            stack.stop()


def session_batch(rng: random.Random, n: int, created: datetime) -> list[dict[str, Any]]:
    return [{"role": ("user", "assistant", "tool")[i % 3], "tool_name": "bench" if i % 3 == 2 else None,
             "content": " ".join(rng.choices(VOCABULARY, ZIPF, k=rng.randint(5, 60))),
             "created_at": (created + timedelta(seconds=20 * i)).isoformat()} for i in range(n)]


def append_sessions(client: Any, rng: random.Random, first: int, last: int, now: datetime,
                    prefix: str = "s") -> tuple[int, float]:
    """Messages first..last-1 as sessions of SESSION_SIZE over HTTP; answers (the last position, seconds)."""
    started, position, written = time.perf_counter(), 0, first
    while written < last:
        n = min(SESSION_SIZE, last - written)
        created = now - timedelta(days=90 * rng.random())
        batch = [{k: v for k, v in m.items() if v is not None} for m in session_batch(rng, n, created)]
        out = client.append_messages(f"{prefix}{written // SESSION_SIZE}", batch)
        position = max(position, out.position)
        written += n
    return position, time.perf_counter() - started


def queries(rng: random.Random, n: int) -> list[str]:
    return [" ".join(rng.choices(VOCABULARY, ZIPF, k=3)) for _ in range(n)]


def timed_multi(client: Any, qs: list[str], domains: list[str] | None, k: int | None,
                warmup: int = WARMUP) -> dict[str, Any]:
    """recall_multi over HTTP for each query: wall (client) and served (the server's latency_ms) p50/p95, and
    each bucket's mean size."""
    wall: list[float] = []
    served: list[float] = []
    sizes: dict[str, list[int]] = {}
    for i, q in enumerate(qs):
        t0 = time.perf_counter()
        answer = client.recall_multi(q, domains=domains, k=k)
        if i >= warmup:
            wall.append((time.perf_counter() - t0) * 1000)
            served.append(answer.latency_ms)
            for b in answer.buckets:
                sizes.setdefault(b.domain, []).append(len(b.results))
    return {"queries": len(wall), "wall_ms": latency_stats(wall), "served_ms": latency_stats(served),
            "bucket_results_mean": {d: round(sum(v) / len(v), 2) for d, v in sizes.items()},
            "loadavg_1m_5m_15m": [round(x, 2) for x in os.getloadavg()]}


def profile(qs: list[str], tenant: str = "default") -> dict[str, Any]:
    """The sessions domain's steps timed in process on the same database, and the BM25 plan of the slowest."""
    from unittest import mock

    from sqlalchemy import text

    from domain.privacy import NO_POLICY
    from domain.text import tokenize
    from infra.db import get_engine, unprepared
    from infra.settings import get_settings
    from recall import keyword
    from recall.domains.sessions import RECALLED, SESSION_KEYWORD, SessionsDomain, _rows, _scope, windows
    from recall.keyword import bm25_top
    from recall.scope import Scope
    from recall.timeframe import NOW

    engine, s, domain = get_engine(), get_settings(), SessionsDomain()
    scope = _scope(Scope(tenant), NO_POLICY)
    n = max(s.sessions.session_candidates, 100)
    steps: dict[str, list[float]] = {"has_data": [], "bm25": [], "rows": [], "windows": [], "bm25_read_all": []}
    slowest: tuple[float, str] = (0.0, "")
    same: dict[str, list[float]] = {"top10": [], "top_n": [], "identical": []}
    with engine.connect() as conn:
        for q in qs:
            t0 = time.perf_counter()
            domain.has_data(conn, scope)
            t1 = time.perf_counter()
            bm25 = bm25_top(conn, scope, tokenize(q), n, s.keyword.bm25_k1, s.keyword.bm25_b, RECALLED,
                            SESSION_KEYWORD, "d.sent")
            t2 = time.perf_counter()
            # the same top n read from every posting: how far the default plan (a walk past 20k postings, exact
            # when it proves its top n; recall/keyword.py) is from Okapi BM25 over everything, and what that costs
            exact = bm25_top(conn, scope, tokenize(q), n, s.keyword.bm25_k1, s.keyword.bm25_b, RECALLED,
                             SESSION_KEYWORD, "d.sent", walk_over=10**12)
            read_all_ms = (time.perf_counter() - t2) * 1000
            same["top10"].append(len(set(list(bm25)[:10]) & set(list(exact)[:10])) / max(1, min(10, len(exact))))
            same["top_n"].append(len(bm25.keys() & exact.keys()) / max(1, len(exact)))
            same["identical"].append(float(list(bm25) == list(exact)))
            t2b = time.perf_counter()
            rows = list(conn.execute(_rows(NOW), {"tenant": tenant, "uids": list(bm25)}))
            t3 = time.perf_counter()
            windows(conn, tenant, [(r.session_id, r.seq) for r in rows[:10]], s.sessions.session_window)
            t4 = time.perf_counter()
            for name, a, b in (("has_data", t0, t1), ("bm25", t1, t2), ("rows", t2b, t3), ("windows", t3, t4)):
                steps[name].append((b - a) * 1000)
            steps["bm25_read_all"].append(read_all_ms)
            slowest = max(slowest, ((t2 - t1) * 1000, q))
        captured: list[tuple[str, Any]] = []

        def capture(conn_: Any, statement: str, params: Any) -> list[Any]:
            captured.append((statement, params))
            return unprepared(conn_, statement, params)

        with mock.patch.object(keyword, "unprepared", capture):  # the statement bm25_top runs, values and all
            bm25_top(conn, scope, tokenize(slowest[1]), n, s.keyword.bm25_k1, s.keyword.bm25_b, RECALLED,
                     SESSION_KEYWORD, "d.sent")
        statement, params = captured[-1]
        plan = [r[0] for r in unprepared(conn, "EXPLAIN (ANALYZE, BUFFERS) " + statement, params)]
        terms = sorted(set(tokenize(slowest[1])))
        dfs: dict[str, int] = dict(conn.execute(
            text("SELECT term, df FROM session_terms WHERE tenant = :t AND term = ANY(:terms)"),
            {"t": tenant, "terms": terms}).all())
    return {"steps_ms": {k: latency_stats(v) for k, v in steps.items()},
            "same_as_read_all": {k: round(sum(v) / len(v), 3) for k, v in same.items()},
            "slowest_query": slowest[1], "slowest_bm25_ms": round(slowest[0], 1), "slowest_dfs": dfs, "plan": plan}


def run(sizes: list[int], n_queries: int, with_profile: bool) -> dict[str, Any]:
    from engramlog_client import Engramlog

    rng, qrng, now = random.Random(7), random.Random(11), datetime.now(UTC)
    steps = []
    with real_stack() as where:
        print(machine_line(), flush=True)
        with Engramlog(where["api_url"], timeout=120) as client:
            written = 0
            for size in sorted(sizes):
                load_before = [round(x, 2) for x in os.getloadavg()]
                position, append_s = append_sessions(client, rng, written, size, now)
                appended = size - written
                print(f"  appended {appended:,} messages over HTTP in {append_s:.1f}s "
                      f"({appended / append_s:.0f}/s)", flush=True)
                caught_s = wait_projected(client, position)
                written = size
                step: dict[str, Any] = {"messages": size, "appended": appended, "append_s": round(append_s, 1),
                        "append_per_s": round(appended / append_s, 1),
                        "projected_after_last_append_s": round(caught_s, 1),
                        "ingest_per_s_end_to_end": round(appended / (append_s + caught_s), 1),
                        "loadavg_before": load_before,
                        "recall": timed_multi(client, queries(qrng, n_queries + WARMUP), ["sessions"], 10)}
                if with_profile:
                    step["profile"] = profile(queries(random.Random(size), 30))
                steps.append(step)
                r = step["recall"]
                print(f"messages={size:,} projected {caught_s:.1f}s after the last append; recall/multi sessions "
                      f"wall p50 {r['wall_ms']['p50']} ms p95 {r['wall_ms']['p95']} ms, served p50 "
                      f"{r['served_ms']['p50']} ms p95 {r['served_ms']['p95']} ms (load {r['loadavg_1m_5m_15m']})",
                      flush=True)
                if with_profile:
                    p = step["profile"]
                    print(f"  profile: {p['steps_ms']}; the default BM25 against reading every posting: "
                          f"{p['same_as_read_all']}; slowest {p['slowest_query']!r} bm25 "
                          f"{p['slowest_bm25_ms']} ms, df {p['slowest_dfs']}", flush=True)
                    print("   " + "\n   ".join(p["plan"]), flush=True)
    return {"bench": "sessions_recall", "machine": machine(), "stack": where, "steps": steps,
            "corpus": {"session_size": SESSION_SIZE, "vocabulary": len(VOCABULARY), "words": "5-60 Zipf",
                       "query_words": 3},
            "path": "HTTP: engramlog_client append_messages, recall_multi(domains=['sessions'], k=10); real "
                    "stack (stack/up.py Stack: worker + uvicorn), default settings"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    result = run(args.messages, args.queries, args.profile)
    result["command"] = (f"python -m bench.sessions_recall --messages {' '.join(map(str, args.messages))} "
                         f"--queries {args.queries}" + (" --profile" if args.profile else ""))
    print(f"saved {save_result('sessions-recall', result, args.output)}")


if __name__ == "__main__":
    main()
