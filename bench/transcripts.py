"""Transcript delta-sync: a 10k-turn transcript put, then put again with 100 more turns, through HTTP.

Through the path users take: PUT /v1/transcripts/{id} (what `engramlog transcripts sync` sends for a changed file)
on the real app (in process: a TestClient, so the request is parsed, validated and answered as over a socket)
on an embedded PostgreSQL. The transcript is JSONL in the OpenAI chat shape with timestamps, turns of 40-400
characters of generated words (seeded). Steps:
1. the first put (every chunk written), then the transcripts projector caught up over it;
2. `--rounds` times: 100 turns appended, the grown transcript put (time, chunks written and reused, bytes the event
   carried against the transcript's size), then the projector caught up over that one event;
3. the same text put again (unchanged: nothing appended), and GET (byte-exact check).

    python -m bench.transcripts [--turns 10000] [--append 100] [--rounds 5] [--output FILE]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

from bench.common import latency_stats, machine, machine_line, save_result, start_stack

WORDS = (
    "deploy", "rollback", "canary", "migration", "replica", "index", "vacuum", "schema", "queue", "worker", "retry",
    "backoff", "cache", "embed", "vector", "token", "budget", "session", "resume", "checkpoint", "agent", "tool",
    "call", "result", "error", "trace", "log", "metric", "alert", "pager", "owner", "review", "merge", "branch",
    "release", "tag", "build", "test", "flaky", "timeout", "socket", "lock", "shard", "tenant",
)


def transcript_lines(n: int, start: int = 0, seed: int = 7) -> list[str]:
    """Turns start..start+n-1 as JSONL lines (each turn's text depends on its index only)."""
    out = []
    for i in range(start, start + n):
        rng = random.Random(seed * 1_000_003 + i)
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 60)))
        role = "user" if i % 2 == 0 else "assistant"
        stamp = f"2026-01-01T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}Z"
        out.append(json.dumps({"role": role, "content": f"turn {i}: {words}", "timestamp": stamp}) + "\n")
    return out


def _event_bytes(engine: Any, tenant: str, position: int) -> int:
    from sqlalchemy import text

    with engine.connect() as conn:
        return conn.execute(text("SELECT octet_length(data::text) FROM events WHERE tenant = :t AND position = :p"),
                            {"t": tenant, "p": position}).scalar_one()


def run(turns: int, append: int, rounds: int) -> dict[str, Any]:
    with start_stack() as where:
        from fastapi.testclient import TestClient

        from api.app import create_app
        from infra.db import get_engine
        from projections.runner import catch_up
        from projections.transcripts import TranscriptsProjector

        engine = get_engine()
        http = TestClient(create_app(), base_url="http://127.0.0.1", client=("127.0.0.1", 50000))
        tenant = "default"  # the keyless API's tenant

        def put(lines: list[str]) -> tuple[dict[str, Any], float]:
            body = "".join(lines).encode("utf-8")
            started = time.perf_counter()
            r = http.put("/v1/transcripts/bench-10k", content=body)
            seconds = time.perf_counter() - started
            if r.status_code != 200:
                raise SystemExit(f"PUT answered {r.status_code}: {r.text[:500]}")
            return r.json(), seconds

        def project() -> float:
            started = time.perf_counter()
            catch_up(engine, TranscriptsProjector(), 500, max_seconds=600)
            return time.perf_counter() - started

        lines = transcript_lines(turns)
        first, first_s = put(lines)
        first_project_s = project()
        deltas = []
        for r in range(rounds):
            lines += transcript_lines(append, start=len(lines))
            out, seconds = put(lines)
            project_s = project()
            deltas.append({"turns": out["turns"], "put_ms": round(seconds * 1000, 1),
                           "project_ms": round(project_s * 1000, 1), "chunks": out["chunks"],
                           "chunks_written": out["chunks_written"], "chunks_reused": out["chunks_reused"],
                           "transcript_bytes": out["bytes"],
                           "event_bytes": _event_bytes(engine, tenant, out["position"])})
            print(f"  round {r + 1}: {out['turns']} turns, put {seconds * 1000:.0f} ms, "
                  f"{out['chunks_written']} chunk(s) written, {out['chunks_reused']} reused; "
                  f"projector {project_s * 1000:.0f} ms")
        unchanged, unchanged_s = put(lines)
        started = time.perf_counter()
        got = http.get("/v1/transcripts/bench-10k")
        get_s = time.perf_counter() - started
        exact = got.content == "".join(lines).encode("utf-8")
    put_ms = [d["put_ms"] for d in deltas]
    return {
        "benchmark": "transcripts_delta_sync", "machine": machine(), "where": where,
        "transcript": {"format": "jsonl (OpenAI shape, timestamps)", "turns": turns, "appended_per_round": append,
                       "rounds": rounds, "bytes": first["bytes"]},
        "first_put": {"put_ms": round(first_s * 1000, 1), "chunks": first["chunks"],
                      "chunks_written": first["chunks_written"], "project_ms": round(first_project_s * 1000, 1)},
        "delta_put": {"put_ms": latency_stats(put_ms), "rounds": deltas,
                      "chunks_written": [d["chunks_written"] for d in deltas],
                      "chunks_reused": [d["chunks_reused"] for d in deltas]},
        "unchanged_put": {"put_ms": round(unchanged_s * 1000, 1), "changed": unchanged["changed"],
                          "chunks_written": unchanged["chunks_written"]},
        "get": {"ms": round(get_s * 1000, 1), "byte_exact": exact},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--append", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    info = machine()
    print(machine_line(info))
    result = run(args.turns, args.append, args.rounds)
    d = result["delta_put"]
    print(f"first put: {result['first_put']}")
    print(f"delta put (+{args.append} turns): p50 {d['put_ms']['p50']} ms; written {d['chunks_written']}, reused "
          f"{d['chunks_reused']}")
    print(f"unchanged put: {result['unchanged_put']}; GET {result['get']}")
    print(f"saved {save_result('transcripts', result, args.output)}")


if __name__ == "__main__":
    main()
