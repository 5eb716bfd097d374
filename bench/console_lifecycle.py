"""What /console/lifecycle costs as a tenant's log grows: the page reads the tenant's status decisions and its
recall streams in the window from the log (eventstore/status_history.py; recall/hitlog_report.py, which counts
recall/analysis.py's keyword gaps in the same pass), so its time follows the memories and recalls held.

On a fresh embedded stack: --memories memories (a tenth of them agent "hr"), --recalls recalls, a decay sweep a
month on (every memory decided again); then the page's time over --rounds loads, with no privacy policy and with
one excluding agent "hr" (every memory's recording then read to decide it), each part's time alone, and the home
page's (/console) for scale.

    python -m bench.console_lifecycle --memories 2000 --recalls 200
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import (
    answered,
    latency_stats,
    loopback_client,
    machine,
    machine_line,
    project_all,
    save_result,
    start_stack,
)

WORDS = ("harbour", "ferry", "ledger", "archive", "meeting", "budget", "garden", "invoice", "kernel", "lantern")
TENANT = "default"  # the loopback caller's tenant: the console is open without keys


def _memory(i: int) -> dict[str, Any]:
    return {"content": f"note {i}: the {WORDS[i % 10]} {WORDS[(i * 3) % 10]} review moved to week {i % 52}",
            "must_keep": True, "agent_id": "hr" if i % 10 == 0 else "ops"}


def _timed(fn: Any, rounds: int) -> dict[str, float]:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return latency_stats(times)


def run(memories: int, recalls: int, rounds: int) -> dict[str, Any]:
    with start_stack() as where:
        from console.pages.lifecycle import memory_statuses
        from domain.privacy import PrivacyPolicy
        from infra.db import get_engine
        from recall.hitlog_report import hitlog_report
        from workers.lifecycle import decay_sweep

        engine = get_engine()
        http = loopback_client()
        ok = answered  # the console's pages are HTML: the response, not a JSON body

        def project() -> None:
            project_all(engine)

        for start in range(0, memories, 100):
            ok(http.post("/v1/memories/batch", json={"memories": [
                _memory(i) for i in range(start, min(memories, start + 100))]}))
        project()
        for i in range(recalls):
            ok(http.post("/v1/recall", json={"query": f"{WORDS[i % 10]} review week {i % 52}", "k": 5}))
        project()
        decay_sweep(engine, datetime.now(UTC) + timedelta(days=40), TENANT)
        project()
        since = datetime.now(UTC) - timedelta(days=30)
        out: dict[str, Any] = {}
        for name, policy in (("no policy", {}), ("excluding agent hr", {"exclude_agents": ["hr"]})):
            ok(http.put("/v1/policy/privacy", json=policy))
            rule = PrivacyPolicy.of(policy)
            page = _timed(lambda: ok(http.get("/console/lifecycle")), rounds)
            home = _timed(lambda: ok(http.get("/console")), rounds)  # a page of the same stack, for scale
            with engine.connect() as conn:
                parts = {"status series": _timed(lambda r=rule: memory_statuses(conn, TENANT, r), rounds),
                         "hit-log report and keyword gaps": _timed(
                             lambda r=rule: hitlog_report(conn, TENANT, r, since), rounds)}
            out[name] = {"page_ms": page, "home_page_ms": home, "parts_ms": parts}
            print(f"  {name}: page p50 {page['p50']} ms (p95 {page['p95']}; /console p50 {home['p50']} ms); "
                  + "; ".join(f"{k} p50 {v['p50']} ms" for k, v in parts.items()))
    return {"benchmark": "console_lifecycle", "machine": machine(), "where": where, "memories": memories,
            "recalls": recalls, "rounds": rounds, "results": out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--recalls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    print(machine_line(machine()))
    result = run(args.memories, args.recalls, args.rounds)
    print(f"saved {save_result('console_lifecycle', result, args.output)}")


if __name__ == "__main__":
    main()
