"""Soak: a paced open-loop load of governed writes and multi-domain recalls against the stack `engramlog up` runs.

The stack is stack/up.py's own `Stack` (what `engramlog up` starts) on a temp data dir and a free port: embedded
PostgreSQL + pgvector, redis-server, the Dramatiq worker and the API under uvicorn, each its own process. The load
is open-loop: each kind has its own clock (100 writes/s and 20 recalls/s by default) and a request is sent at its
time whatever the previous ones are doing, up to a cap on requests in flight (each kind its own); a request due
while its cap is full is not sent and counted as `skipped`, so the achieved rate says what the stack kept up with.
Writes are `POST /v1/memories` (governed: no must_keep), each a distinct generated sentence; recalls `POST
/v1/recall/multi`; both spread over `--agents` agent scopes, since the governor serializes one scope's writes (a
lock per scope).

Every few seconds it looks at the projections' lag (GET /v1/projections), the RSS of every process of the stack
(PostgreSQL as the sum of its processes' PSS: each backend's RSS counts the shared buffers it touched again),
pg_database_size and the projections' wake-up queue in Redis (LLEN of `dramatiq:projections`: messages sent and not
yet taken by a worker). At the end, once the projections have caught up, every acknowledged write is read back by id
(GET /v1/memories/{id}: a lost write is one that is not there) and a sample is recalled by its own text.

    python -m bench.soak [--minutes 30] [--writes-per-s 100] [--recalls-per-s 20] [--in-flight 16] [--agents 10]
                         [--output F] [--keep-data-dir]

Prints per-minute rows, writes bench/results/soak-<stamp>.json and three PNG charts beside it (bench/soak_report.py).
The stack's data dir is removed at the end unless --keep-data-dir.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import socket
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

import httpx
import psutil
import redis

from bench.common import RESULTS_DIR, latency_stats, machine, machine_line, save_result, stamp
from bench.corpus import sentences
from bench.soak_report import Call, Sample, answered, charts, minutes, rss_slopes

AGENT = "soak"
SAMPLE_EVERY_S = 5.0
TIMEOUT_S = 60.0
CATCH_UP_S = 900.0
# The projections' wake-up queue as Dramatiq's RedisBroker keeps it (namespace "dramatiq", infra/wake.py's queue):
# named here, not imported, since importing infra.wake would build a broker in this process.
WAKE_QUEUE_KEY = "dramatiq:projections"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def up_stack(keep_data_dir: bool = False) -> Iterator[Any]:
    """`engramlog up`'s Stack on a temp data dir and a free port, every server embedded; stopped on exit, and its
    data dir removed (a soak's store is hundreds of MB) unless `keep_data_dir`."""
    for name in ("DATABASE_URL", "REDIS_URL"):  # the embedded servers, never one from the environment
        os.environ.pop(name, None)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("ENGRAMLOG_LOG_LEVEL", "warning")
    data_dir = os.environ["ENGRAMLOG_DATA_DIR"] = tempfile.mkdtemp(prefix="engramlog-soak-")
    os.environ["ENGRAMLOG_PORT"] = str(_free_port())
    from infra.logging import configure_logging
    from infra.settings import Settings
    from stack.up import Stack

    settings = Settings()
    configure_logging(settings.stack.log_level)
    stack = Stack(settings, settings.workers.workers)
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()
        if not keep_data_dir:
            shutil.rmtree(data_dir, ignore_errors=True)


def _label(proc: psutil.Process, seen: Counter[str]) -> str:
    """A stable name for a process of the stack: api (api-1.. under uvicorn's supervisor when there are several),
    worker-master, worker-1.., postgres, redis."""
    cmd = " ".join(proc.cmdline())
    if "uvicorn" in cmd:
        return "api"
    parent = proc.parent()
    parent_cmd = "" if parent is None else " ".join(parent.cmdline())
    if "uvicorn" in parent_cmd and "spawn_main" in cmd:
        seen["api"] += 1
        return f"api-{seen['api']}"
    if "dramatiq" in cmd:
        if "dramatiq" in parent_cmd:
            seen["worker"] += 1
            return f"worker-{seen['worker']}"
        return "worker-master"
    if proc.name().startswith("postgres"):
        return "postgres"
    if proc.name().startswith("redis"):
        return "redis"
    return proc.name()


def memory_mib() -> dict[str, float]:
    """RSS of each process of the stack (this process's descendants) and of this load generator, in MiB;
    PostgreSQL's processes summed as PSS."""
    out: dict[str, float] = {}
    seen: Counter[str] = Counter()
    for proc in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            label = _label(proc, seen)
            if label == "postgres":
                out["postgres (PSS)"] = out.get("postgres (PSS)", 0.0) + proc.memory_full_info().pss / 2**20
            else:
                out[label] = out.get(label, 0.0) + proc.memory_info().rss / 2**20
    out["load generator"] = psutil.Process().memory_info().rss / 2**20
    return {k: round(v, 1) for k, v in sorted(out.items())}


def _facts(n: int) -> list[str]:
    """n distinct memories: generated sentences, each with its own reference so none reinforces another."""
    return [f"{s.rstrip('.')} (ref {i:06x})." for i, s in enumerate(sentences(n, seed=16))]


class Load:
    """The open-loop load: two paced clocks feeding one pool of senders, and what they recorded."""

    def __init__(self, http: httpx.Client, in_flight: int, facts: list[str], queries: list[str],
                 agents: int) -> None:
        self.http = http
        self.agents = [f"{AGENT}-{i}" for i in range(agents)]
        # A cap per kind, so that writes (5x as frequent) cannot starve the recalls of slots.
        self.slots = {kind: threading.BoundedSemaphore(in_flight) for kind in ("write", "recall")}
        self.pool = ThreadPoolExecutor(max_workers=2 * in_flight, thread_name_prefix="soak")
        self.facts, self.queries = iter(facts), queries
        self.calls: list[Call] = []
        self.acked: list[dict[str, Any]] = []  # {memory_id, content, disposition} of each 201
        self.skipped: Counter[str] = Counter()
        self.statuses: Counter[str] = Counter()
        self.started = 0.0
        self.stop = threading.Event()

    def _send(self, kind: str, path: str, body: dict[str, Any]) -> None:
        at = time.perf_counter()
        try:
            r = self.http.post(path, json=body)
            code = r.status_code
        except httpx.HTTPError as exc:
            code, r = 0, None
            self.statuses[f"{kind} {type(exc).__name__}"] += 1
        finally:
            self.slots[kind].release()
        ms = (time.perf_counter() - at) * 1000
        self.calls.append(Call(kind, at - self.started, ms, code))
        self.statuses[f"{kind} {code}"] += 1
        if kind == "write" and r is not None and code == 201:
            out = r.json()
            self.acked.append({"memory_id": out["memory_id"], "content": body["content"], "agent_id": body["agent_id"],
                               "disposition": out.get("disposition")})

    def _write(self) -> tuple[str, dict[str, Any]] | None:
        fact = next(self.facts, None)
        # Round-robin over the agents: the governor serializes one scope's writes (an advisory lock per scope).
        return None if fact is None else ("/v1/memories", {"content": fact, "agent_id": random.choice(self.agents)})

    def _recall(self) -> tuple[str, dict[str, Any]] | None:
        return "/v1/recall/multi", {"query": random.choice(self.queries), "agent_id": random.choice(self.agents)}

    def _clock(self, kind: str, per_s: float, next_request: Callable[[], tuple[str, dict[str, Any]] | None]) -> None:
        if per_s <= 0:
            return
        due = self.started
        while not self.stop.is_set():
            due += 1.0 / per_s
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            if not self.slots[kind].acquire(blocking=False):
                self.skipped[kind] += 1  # the cap is full: this request is not sent (open loop: no catching up)
                continue
            request = next_request()
            if request is None:
                self.slots[kind].release()
                return
            self.pool.submit(self._send, kind, *request)

    def run(self, seconds: float, writes_per_s: float, recalls_per_s: float,
            on_sample: Callable[[float], None]) -> float:
        """Drive the load for `seconds`, calling `on_sample(t)` every SAMPLE_EVERY_S; the seconds it ran."""
        self.started = time.perf_counter()
        clocks = [threading.Thread(target=self._clock, args=("write", writes_per_s, self._write), daemon=True),
                  threading.Thread(target=self._clock, args=("recall", recalls_per_s, self._recall), daemon=True)]
        for c in clocks:
            c.start()
        next_sample = 0.0
        while (t := time.perf_counter() - self.started) < seconds:
            if t >= next_sample:
                on_sample(t)
                next_sample += SAMPLE_EVERY_S
            time.sleep(min(0.5, max(0.0, next_sample - t)))
        self.stop.set()
        for c in clocks:
            c.join()
        ran = time.perf_counter() - self.started
        self.pool.shutdown(wait=True)  # the requests in flight finish and are counted
        return ran


def _lag(http: httpx.Client) -> tuple[int, float]:
    ps = http.get("/v1/projections").json()["projections"]
    return max(p["lag_events"] for p in ps), max(p["lag_seconds"] for p in ps)


def _db_mib(engine: Any) -> float:
    from sqlalchemy import text

    with engine.connect() as conn:
        return round(int(conn.execute(text("SELECT pg_database_size(current_database())")).scalar_one()) / 2**20, 1)


def _wake_queue(client: redis.Redis) -> int:
    try:
        return int(client.llen(WAKE_QUEUE_KEY))
    except redis.RedisError:
        return -1


def _catch_up(http: httpx.Client) -> float:
    """Seconds until no projection has an event left to apply."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < CATCH_UP_S:
        if _lag(http)[0] == 0:
            return time.perf_counter() - t0
        time.sleep(1.0)
    raise TimeoutError(f"projections still lagging {_lag(http)} after {CATCH_UP_S:.0f}s")


def check_writes(http: httpx.Client, acked: list[dict[str, Any]], recall_sample: int) -> dict[str, Any]:
    """Every acknowledged write read back by id (its status in the read model), and `recall_sample` of the
    active ones recalled by their own text (k=10, agent scope)."""

    def get(w: dict[str, Any]) -> tuple[int, str | None]:
        r = http.get(f"/v1/memories/{w['memory_id']}")
        return r.status_code, (r.json().get("status") if r.status_code == 200 else None)

    with ThreadPoolExecutor(max_workers=8) as pool:
        found = list(pool.map(get, acked))
    lost = [w["memory_id"] for w, (code, _) in zip(acked, found, strict=True) if code != 200]
    active = [w for w in acked if w["disposition"] == "active"]
    sample = random.Random(0).sample(active, min(recall_sample, len(active)))

    def recalled(w: dict[str, Any]) -> bool:
        r = http.post("/v1/recall", json={"query": w["content"], "agent_id": w["agent_id"], "k": 10})
        return r.status_code == 200 and w["memory_id"] in [x["memory_id"] for x in r.json()["results"]]

    with ThreadPoolExecutor(max_workers=4) as pool:
        missed = sum(not ok for ok in pool.map(recalled, sample))
    return {"acknowledged": len(acked), "found_by_id": len(acked) - len(lost), "lost": len(lost),
            "lost_ids": lost[:20], "read_model_status": dict(Counter(s for _, s in found if s)),
            "dispositions": dict(Counter(w["disposition"] for w in acked)),
            "recall_sample": len(sample), "recall_sample_missed": missed}


def run(minutes_: float, writes_per_s: float, recalls_per_s: float, in_flight: int, agents: int,
        warmup_s: float, recall_sample: int, keep_data_dir: bool = False) -> dict[str, Any]:
    from sqlalchemy import create_engine

    seconds = minutes_ * 60
    t_start = time.perf_counter()
    with up_stack(keep_data_dir) as stack:
        started_s = time.perf_counter() - t_start
        print(f"stack up in {started_s:.0f}s at {stack.api_url} (data dir {stack.data_dir})", flush=True)
        engine = create_engine(stack.database_url, pool_size=1)
        queue = redis.Redis.from_url(stack.redis_url, socket_timeout=5)
        limits = httpx.Limits(max_connections=2 * in_flight + 8, max_keepalive_connections=2 * in_flight + 8)
        with httpx.Client(base_url=stack.api_url, timeout=TIMEOUT_S, limits=limits) as http:
            http.post("/v1/recall/multi", json={"query": "warming up", "agent_id": AGENT}).raise_for_status()
            load = Load(http, in_flight, _facts(int(writes_per_s * seconds * 1.05) + 10),
                        [s.rstrip(".") + "?" for s in sentences(500, seed=99)], agents)
            samples: list[Sample] = []

            def on_sample(t: float) -> None:
                stack.supervise(time.monotonic())  # as `engramlog up` does: a child that died is restarted
                try:
                    lag_events, lag_s = _lag(http)
                except (httpx.HTTPError, ValueError, KeyError):
                    lag_events, lag_s = -1, -1.0
                samples.append(Sample(round(t, 1), lag_events, lag_s, memory_mib(), _db_mib(engine),
                                      _wake_queue(queue)))
                if int(t) % 60 < SAMPLE_EVERY_S and t >= 60:
                    row = minutes(load.calls, samples, t)[int(t // 60) - 1]
                    print(_row_line(row), flush=True)

            ran = load.run(seconds, writes_per_s, recalls_per_s, on_sample)
            samples.append(Sample(round(ran, 1), *_lag(http), memory_mib(), _db_mib(engine), _wake_queue(queue)))
            catch_up_s = _catch_up(http)
            wake_queue_caught_up = _wake_queue(queue)
            print(f"load stopped after {ran:.0f}s; projections caught up {catch_up_s:.1f}s later", flush=True)
            check = check_writes(http, load.acked, recall_sample)
            db_end = _db_mib(engine)
        engine.dispose()
        queue.close()
        restarts = {name: r.crashes for name, r in stack._restarts.items()}
        api_processes = stack.settings.stack.api_processes
    rows = minutes(load.calls, samples, ran)
    return {"machine": machine(), "stack": "stack.up.Stack (engramlog up): embedded PostgreSQL + pgvector, "
            "redis-server, one Dramatiq worker (1 process, 2 threads), uvicorn API over HTTP on loopback",
            "api_processes": api_processes,
            "minutes": minutes_, "seconds_ran": round(ran, 1), "stack_start_s": round(started_s, 1),
            "target": {"writes_per_s": writes_per_s, "recalls_per_s": recalls_per_s,
                       "in_flight_cap_per_kind": in_flight, "agents": agents},
            "achieved": _achieved(load.calls, ran), "skipped": dict(load.skipped), "statuses": dict(load.statuses),
            "per_minute": rows, "samples": [asdict(s) for s in samples],
            "rss_slope_mib_per_min_after_warmup": rss_slopes(samples, warmup_s), "warmup_s": warmup_s,
            "lag_events_max": max(s.lag_events for s in samples), "lag_s_max": max(s.lag_s for s in samples),
            "catch_up_s": round(catch_up_s, 1), "db_mib_end": db_end, "writes": check,
            "wake_queue_max": max(s.wake_queue for s in samples), "wake_queue_end": samples[-1].wake_queue,
            "wake_queue_caught_up": wake_queue_caught_up,
            "child_restarts": restarts}


def _achieved(calls: list[Call], seconds: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("write", "recall"):
        ok, errors = answered(calls, kind)
        out[kind] = {"rate_per_s": round(len(ok) / seconds, 2), **latency_stats(ok), "errors": errors}
    return out


def _row_line(row: dict[str, Any]) -> str:
    w, r = row["write"], row["recall"]
    return (f"min {row['minute']:2d}: writes {w['rate_per_s']:6.1f}/s p50 {w['p50_ms']:7.1f} p95 {w['p95_ms']:7.1f}"
            f" err {w['errors']} | recalls {r['rate_per_s']:5.1f}/s p50 {r['p50_ms']:7.1f} p95 {r['p95_ms']:7.1f}"
            f" err {r['errors']} | lag {row['lag_events_max']} ev / {row['lag_s_max']} s | db {row['db_mib']} MiB"
            f" | wake-ups queued {row['wake_queue_last']} | rss {row['rss_mib']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--writes-per-s", type=float, default=100.0)
    parser.add_argument("--recalls-per-s", type=float, default=20.0)
    parser.add_argument("--in-flight", type=int, default=16, help="cap on requests in flight, each kind (default 16)")
    parser.add_argument("--agents", type=int, default=10, help="agent scopes the writes and recalls spread over")
    parser.add_argument("--warmup-s", type=float, default=60.0, help="left out of the RSS slope (default 60)")
    parser.add_argument("--recall-sample", type=int, default=200, help="acknowledged writes recalled at the end")
    parser.add_argument("--output", type=Path, help="the JSON result (default bench/results/soak-<stamp>.json)")
    parser.add_argument("--keep-data-dir", action="store_true",
                        help="keep the stack's data dir (its database, logs) after the run; removed by default")
    args = parser.parse_args()
    print(machine_line(machine()), flush=True)
    result = run(args.minutes, args.writes_per_s, args.recalls_per_s, args.in_flight, args.agents, args.warmup_s,
                 args.recall_sample, args.keep_data_dir)
    name = stamp()
    path = save_result("soak", result, args.output or RESULTS_DIR / f"soak-{name}.json")
    pngs = charts([Sample(**s) for s in result["samples"]], result["per_minute"], path.parent, path.stem)
    for row in result["per_minute"]:
        print(_row_line(row))
    a, w = result["achieved"], result["writes"]
    print(f"achieved: writes {a['write']['rate_per_s']}/s (target {args.writes_per_s}), recalls "
          f"{a['recall']['rate_per_s']}/s (target {args.recalls_per_s}); skipped at the cap: {result['skipped']}")
    print(f"writes p50/p95 {a['write']['p50']}/{a['write']['p95']} ms; recall/multi p50/p95 {a['recall']['p50']}/"
          f"{a['recall']['p95']} ms; statuses {result['statuses']}")
    print(f"lag max {result['lag_events_max']} events / {result['lag_s_max']} s; caught up {result['catch_up_s']} s "
          f"after the load; database {result['db_mib_end']} MiB")
    print(f"wake-ups queued (LLEN {WAKE_QUEUE_KEY}): max {result['wake_queue_max']}, at the load's end "
          f"{result['wake_queue_end']}, once caught up {result['wake_queue_caught_up']}")
    print(f"RSS slope after {args.warmup_s:.0f}s (MiB/min): {result['rss_slope_mib_per_min_after_warmup']}")
    print(f"writes: {w['acknowledged']} acknowledged, {w['found_by_id']} found by id, {w['lost']} lost; "
          f"recalled by their text: {w['recall_sample'] - w['recall_sample_missed']}/{w['recall_sample']}; "
          f"read model status {w['read_model_status']}")
    print(f"result: {path}; charts: {', '.join(map(str, pngs)) or 'none (matplotlib not installed)'}")


if __name__ == "__main__":
    main()
