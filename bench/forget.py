"""Forget time and what it touched, per subject size (docs/forget.md), on a fresh embedded stack.

A background of --background memories and one session of filler; then, for each size n: an entity named in n
memories (forgotten by {"entity"}), and a session of 10·n messages (forgotten by {"session_id"}), each recalled
once before so its recall record goes with it. Per forget: the dry run's time, the forget's total time and its
transaction's (plan, uncache, keys destroyed, SubjectForgotten; the rest is the read models' rebuilds), streams,
dependent recall records, events, keys, projections rebuilt. Also the cost of sealing at append (eventstore/codec.py)
per event.

    python -m bench.forget --sizes 1 10 40 --background 200
"""

from __future__ import annotations

import argparse
import time
import uuid
from pathlib import Path
from typing import Any

from bench.common import loopback_client, machine, machine_line, ok, project_all, save_result, start_stack

WORDS = ("harbour", "ferry", "ledger", "archive", "meeting", "budget", "garden", "invoice", "kernel", "lantern")


def _filler(i: int) -> str:
    return f"note {i}: the {WORDS[i % 10]} {WORDS[(i * 3) % 10]} review moved to week {i % 52}"


def _seal_cost(engine: Any, n: int = 2000) -> dict[str, float]:
    """Microseconds per event to seal n memory payloads (keys created) and to open them again."""
    from domain.events import NewEvent, RecordedEvent, memory_stream
    from eventstore.codec import open_events, seal

    events = [NewEvent("MemoryRecorded", memory_stream(uuid.uuid4()), {"memory_id": str(uuid.uuid4()),
                                                                       "content": _filler(i) * 4})
              for i in range(n)]
    with engine.begin() as conn:
        started = time.perf_counter()
        stored = seal(conn, "bench-seal", events)
        sealed_s = time.perf_counter() - started
        recorded = [RecordedEvent(i, e.event_id, "bench-seal", e.stream_id, 1, e.type, 2, d, {}, None, None, 0)  # type: ignore[arg-type]
                    for i, (e, d) in enumerate(zip(events, stored, strict=True))]
        started = time.perf_counter()
        opened = open_events(conn, recorded, keep_forgotten=True)
        open_s = time.perf_counter() - started
        assert [o.data["content"] for o in opened] == [e.data["content"] for e in events]
        conn.rollback()
    return {"events": n, "seal_us_per_event": round(sealed_s / n * 1e6, 1),
            "open_us_per_event": round(open_s / n * 1e6, 1)}


def run(sizes: list[int], background: int) -> dict[str, Any]:
    with start_stack() as where:
        from infra.db import get_engine

        engine = get_engine()
        http = loopback_client()

        def project() -> None:
            project_all(engine, max_seconds=600)

        for start in range(0, background, 50):
            ok(http.post("/v1/memories/batch", json={"memories": [
                {"content": _filler(i)} for i in range(start, min(background, start + 50))]}))
        ok(http.post("/v1/sessions/filler/messages", json={"messages": [
            {"role": "user", "content": _filler(i)} for i in range(100)]}))
        project()
        rows = []
        for n in sizes:
            name = f"Person{uuid.uuid4().hex[:6].capitalize()} Example"
            for start in range(0, n, 50):
                ok(http.post("/v1/memories/batch", json={"memories": [
                    {"content": f"{name} handles the {WORDS[i % 10]} item {i} of batch {start}"}
                    for i in range(start, min(n, start + 50))]}))
            session = f"s-{uuid.uuid4().hex[:8]}"
            for start in range(0, 10 * n, 100):
                ok(http.post(f"/v1/sessions/{session}/messages", json={"messages": [
                    {"role": "user", "content": f"message {i} about the {WORDS[i % 10]}"}
                    for i in range(start, min(10 * n, start + 100))]}))
            project()
            ok(http.post("/v1/recall/multi", json={"query": f"{name} handles", "k": 10}))
            ok(http.post("/v1/recall/multi", json={"query": "message about the ledger", "k": 10,
                                                   "domains": ["sessions"]}))
            project()
            for kind, value, size in (("entity", name, n), ("session_id", session, 10 * n)):
                started = time.perf_counter()
                plan = ok(http.post("/v1/forget", json={kind: value, "dry_run": True}))
                dry_s = time.perf_counter() - started
                receipt = ok(http.post("/v1/forget", json={kind: value}))
                row = {"kind": kind, "size": size, "dry_run_ms": round(dry_s * 1000, 1),
                       "forget_s": receipt["seconds"], "shred_s": receipt["shred_seconds"],
                       "streams": receipt["streams"], "dependent_streams": receipt["dependent_streams"],
                       "events": receipt["events"], "sealed_events": receipt["sealed_events"],
                       "keys": receipt["keys"], "projections": receipt["projections"],
                       "embeddings_uncached": receipt["embeddings_uncached"], "planned_keys": plan["keys"]}
                rows.append(row)
                print(f"  {kind} of size {size}: dry run {row['dry_run_ms']} ms; forget {row['forget_s']} s "
                      f"(shred {row['shred_s']} s, the rest {len(row['projections'])} rebuilds); "
                      f"{sum(row['streams'].values())} streams + {row['dependent_streams']} recall records, "
                      f"{row['sealed_events']} sealed events, {row['keys']} keys")
        with engine.connect() as conn:
            from sqlalchemy import text

            log_events = conn.execute(text("SELECT count(*) FROM events")).scalar_one()
        seal_cost = _seal_cost(engine)
    return {"benchmark": "forget", "machine": machine(), "where": where, "background_memories": background,
            "log_events_at_end": log_events, "forgets": rows, "seal": seal_cost}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 40])
    parser.add_argument("--background", type=int, default=200)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    print(machine_line(machine()))
    result = run(args.sizes, args.background)
    print(f"log: {result['log_events_at_end']} events at the end; seal {result['seal']}")
    print(f"saved {save_result('forget', result, args.output)}")


if __name__ == "__main__":
    main()
