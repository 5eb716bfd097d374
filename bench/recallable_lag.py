"""Write-to-recallable lag on the path users take: a governed `POST /v1/memories` (or `/batch`), a real Dramatiq
worker projecting, then `POST /v1/recall` (no min_position) polled until it returns the memory.

The lag runs from the write's answer (its transaction has committed) to the first recall that returns it. It is
measured for single writes (one memory each, distinct facts with an identifier) and for 1,000-memory batches
(a sample of each batch's memories, polled in turn). Beside it: how long the vectors projector took to embed
each batch (the embedding rate), which read-your-writes does not wait for (a memory without its vector is scored
on its keyword leg).

    python -m bench.recallable_lag [--singles 50] [--batches 2] [--sample 20] [--output FILE]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rich.console import Console

from bench.common import latency_stats, machine, machine_line, save_result, start_stack, wide
from bench.corpus import sentences

POLL_S = 0.02
DEADLINE_S = 120.0


def _worker() -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "dramatiq", "workers.main", "--processes", "1", "--threads", "2",
           "--queues", "projections", "ingest"]
    return subprocess.Popen(cmd, cwd=Path(__file__).resolve().parent.parent, env=dict(os.environ),
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _until_recalled(http: Any, query: str, agent_id: str, memory_id: str, since: float) -> float:
    """Seconds from `since` to the first recall of `query` that returns `memory_id`."""
    while time.perf_counter() - since < DEADLINE_S:
        r = http.post("/v1/recall", json={"query": query, "agent_id": agent_id, "k": 10})
        if r.status_code == 200 and memory_id in [x["memory_id"] for x in r.json()["results"]]:
            return time.perf_counter() - since
        time.sleep(POLL_S)
    raise TimeoutError(f"memory {memory_id} not recallable after {DEADLINE_S}s")


def _until_all_recalled(http: Any, pending: list[tuple[str, str]], agent_id: str, since: float,
                        recall_ms: list[float]) -> list[float]:
    """Seconds from `since` until each (query, memory_id) is first recalled, polling them round-robin; each
    recall's own latency goes to `recall_ms`."""
    lags: list[float] = []
    while pending:
        if time.perf_counter() - since > DEADLINE_S:
            raise TimeoutError(f"{len(pending)} memories not recallable after {DEADLINE_S}s")
        for query, memory_id in list(pending):
            t0 = time.perf_counter()
            r = http.post("/v1/recall", json={"query": query, "agent_id": agent_id, "k": 10})
            recall_ms.append((time.perf_counter() - t0) * 1000)
            if r.status_code == 200 and memory_id in [x["memory_id"] for x in r.json()["results"]]:
                lags.append(time.perf_counter() - since)
                pending.remove((query, memory_id))
        time.sleep(POLL_S)
    return lags


def _until_vectors(engine: Any, position: int, since: float) -> float:
    from projections.registry import PROJECTORS
    from projections.runner import has_reached

    while True:
        with engine.connect() as conn:
            if has_reached(conn, PROJECTORS["vectors"], position):
                return time.perf_counter() - since
        time.sleep(0.05)


def _facts(n: int, seed: int) -> list[str]:
    return [f"{s.rstrip('.')} (ref {uuid.UUID(int=seed * 100_000 + i).hex[-8:]})." for i, s in
            enumerate(sentences(n, seed=seed))]


def run(singles: int, batches: int, sample: int, console: Console) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    from api.app import create_app
    from infra.db import get_engine

    engine = get_engine()
    worker = _worker()
    try:
        with TestClient(create_app(), base_url="http://127.0.0.1", client=("127.0.0.1", 50000)) as http:
            warm = http.post("/v1/memories", json={"content": "warming the stack up", "agent_id": "warm"}).json()
            _until_recalled(http, "warming the stack up", "warm", warm["memory_id"], time.perf_counter())

            single_s: list[float] = []
            for i, fact in enumerate(_facts(singles, seed=3)):
                written = http.post("/v1/memories", json={"content": fact, "agent_id": "single"})
                since = time.perf_counter()
                assert written.status_code == 201, written.text
                single_s.append(_until_recalled(http, fact, "single", written.json()["memory_id"], since))
                if i and i % 10 == 0:
                    console.print(f"  single writes: {i}/{singles}")

            batch_s: list[float] = []
            recall_ms: list[float] = []  # each poll's recall latency during the batches
            embed_rates: list[float] = []
            for b in range(batches):
                agent = f"batch-{b}"
                facts = _facts(1000, seed=10 + b)
                t0 = time.perf_counter()
                r = http.post("/v1/memories/batch", json={"memories": [{"content": f, "agent_id": agent}
                                                                       for f in facts]})
                write_s = time.perf_counter() - t0
                assert r.status_code == 201, r.text
                written = r.json()["memories"]
                since = time.perf_counter()
                last = max(m["position"] for m in written)
                step = max(1, len(written) // sample)
                # Polled round-robin, each sample timed from the write's answer: polled in turn, a late sample's
                # lag would include the time spent recalling the samples before it.
                # The vectors projector is watched meanwhile, in a thread of its own.
                with ThreadPoolExecutor(1) as pool:
                    embedded = pool.submit(_until_vectors, engine, last, since)
                    batch_s.extend(_until_all_recalled(http, [(fact, m["memory_id"]) for m, fact in
                                                              list(zip(written, facts, strict=True))[::step][:sample]],
                                                       agent, since, recall_ms))
                    embedded_s = embedded.result()
                embed_rates.append(len(written) / embedded_s)
                console.print(f"  batch {b + 1}/{batches}: write {write_s:.2f}s, sampled memories recallable "
                              f"after {max(batch_s[-sample:]):.2f}s, vectors projected after {embedded_s:.1f}s")
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(30)
    to_ms = [s * 1000 for s in single_s]
    batch_ms = [s * 1000 for s in batch_s]
    return {"singles": {"n": len(single_s), "lag_ms": latency_stats(to_ms)},
            "batches": {"n": batches, "size": 1000, "sampled": len(batch_s), "lag_ms": latency_stats(batch_ms),
                        "recall_ms_while_polling": latency_stats(recall_ms)},
            "vectors_embedding_rate_per_s": round(sum(embed_rates) / len(embed_rates), 1) if embed_rates else None,
            "poll_interval_ms": POLL_S * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--singles", type=int, default=50)
    parser.add_argument("--batches", type=int, default=2)
    parser.add_argument("--sample", type=int, default=20)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    console = wide(Console())
    with start_stack() as where:
        info = machine()
        console.print(machine_line(info))
        result = run(args.singles, args.batches, args.sample, console)
    result.update({"machine": info, "stack": where})
    s, b = result["singles"]["lag_ms"], result["batches"]["lag_ms"]
    console.print(f"write → recallable, single governed writes: p50 {s['p50']:.0f} ms, p95 {s['p95']:.0f} ms "
                  f"(n={result['singles']['n']}); 1,000-memory batches: p50 {b['p50']:.0f} ms, p95 {b['p95']:.0f} ms "
                  f"(n={result['batches']['sampled']}); vectors projector embedding rate "
                  f"{result['vectors_embedding_rate_per_s']}/s (not waited for)")
    console.print(f"saved {save_result('recallable-lag', result, args.output)}")


if __name__ == "__main__":
    main()
