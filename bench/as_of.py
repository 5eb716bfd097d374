"""Recall latency: current vs as_of (recorded time) vs since/until (valid time), in one run, on a fresh embedded
stack (docs/recall.md, "Valid time and recorded time").

--memories memories (occurred_at spread over two years, written in batches of 100, a tenth of them superseded
afterwards), then for each of --queries queries, --rounds interleaved rounds of four recalls through
POST /v1/recall: current; as_of the middle of the writes (half the memories recorded, none superseded yet); as_of
the head (the versions relation over the same memories the current read holds: its overhead alone); since/until a
three-month range. Latency is the API's own `latency_ms` (the funnel, the hit-log append excluded) and the wall
time of the HTTP call. The warm-up recalls (each mode once per query) are projected before the measured rounds, so
memory_activity and memory_activity_versions hold their accesses (as_of reads the versions: the activation as of).
Also: memory_versions rows against memories, and the memories and activity projections' verify (a whole replay into
scratch tables, compared row for row) time.

    python -m bench.as_of --memories 2000 --queries 20 --rounds 3
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import (
    loopback_client,
    machine,
    machine_line,
    measure_modes,
    ok,
    print_modes,
    project_all,
    save_result,
    start_stack,
)

WORDS = ("harbour", "ferry", "ledger", "archive", "meeting", "budget", "garden", "invoice", "kernel", "lantern",
         "orchard", "violin", "glacier", "pepper", "saddle", "compass", "tunnel", "marble", "quartz", "walnut")
START = datetime(2024, 1, 1, tzinfo=UTC)
RESULTS = Path(__file__).parent / "results" / "as_of.json"


def _text(i: int) -> str:
    w = WORDS
    return (f"note {i}: the {w[i % 20]} {w[(i * 7) % 20]} review with the {w[(i * 3) % 20]} team moved to "
            f"week {i % 52}")


def run(n: int, queries: int, rounds: int) -> dict[str, Any]:
    with start_stack() as where:
        from sqlalchemy import text

        from infra.db import get_engine
        from projections.rebuild import verify
        from projections.registry import PROJECTORS
        from projections.runner import catch_up

        engine = get_engine()
        http = loopback_client()

        ids: list[str] = []
        middle = 0
        span_days = 730
        for start in range(0, n, 100):
            out = ok(http.post("/v1/memories/batch", json={"memories": [
                {"content": _text(i), "must_keep": True,
                 "occurred_at": (START + timedelta(days=span_days * i / n)).isoformat()}
                for i in range(start, min(n, start + 100))]}))
            ids += [m["memory_id"] for m in out["memories"]]
            if start + 100 >= n // 2 and not middle:
                middle = max(m["position"] for m in out["memories"])
        for i in range(0, n, 10):
            ok(http.post(f"/v1/memories/{ids[i]}/supersede",
                         json={"content": _text(i) + " (rescheduled)", "reason": "moved"}))
        project_all(engine)
        with engine.connect() as conn:
            head_position = conn.execute(text("SELECT max(position) FROM events")).scalar_one()
            counts = {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one()
                      for t in ("memories", "memory_versions", "events")}
        since = START + timedelta(days=300)
        modes: dict[str, dict[str, Any]] = {
            "current": {},
            "as_of_middle": {"as_of": middle},
            "as_of_head": {"as_of": head_position},
            "since_until_3_months": {"since": since.isoformat(), "until": (since + timedelta(days=91)).isoformat()},
        }
        asked = [f"{WORDS[q % 20]} {WORDS[(q * 7 + 3) % 20]} review" for q in range(queries)]
        for q in asked:  # warm: each mode once per query, not measured
            for extra in modes.values():
                ok(http.post("/v1/recall", json={"query": q, "k": 10, **extra}))
        # the warm recalls' accesses: memory_activity and its versions, read by every measured recall (the activity
        # projection only: the others are left as the before-runs measured them)
        catch_up(engine, PROJECTORS["activity"], 1000, max_seconds=1200)
        with engine.connect() as conn:
            counts.update({t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one()
                           for t in ("memory_activity", "memory_activity_versions")})
        per_mode = measure_modes(lambda q, extra: ok(http.post("/v1/recall", json={"query": q, "k": 10, **extra})),
                                 asked, modes, rounds, lambda out: len(out["results"]))
        started = time.perf_counter()  # a verify replays the whole log into scratch tables, as a rebuild does
        identical = verify(engine, PROJECTORS["memories"]).identical
        rebuild_s = time.perf_counter() - started
        started = time.perf_counter()
        activity_identical = verify(engine, PROJECTORS["activity"]).identical
        activity_s = time.perf_counter() - started
    return {"benchmark": "as_of", "machine": machine(), "where": where, "memories_written": n,
            "superseded": len(range(0, n, 10)), "queries": queries, "rounds": rounds, "k": 10,
            "as_of_middle": middle, "head": head_position, "rows": counts,
            "memories_verify_s": round(rebuild_s, 2), "memories_verify_identical": identical,
            "activity_verify_s": round(activity_s, 2), "activity_verify_identical": activity_identical,
            "modes": per_mode}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    print(machine_line(machine()))
    result = run(args.memories, args.queries, args.rounds)
    print(f"{result['memories_written']} memories ({result['superseded']} superseded), rows {result['rows']}; "
          f"memories projection replayed and verified in {result['memories_verify_s']} s "
          f"(identical: {result['memories_verify_identical']}); activity projection in "
          f"{result['activity_verify_s']} s (identical: {result['activity_verify_identical']})")
    print_modes(result["modes"])
    print(f"saved {save_result('as_of', result, args.output)}")


if __name__ == "__main__":
    main()
