"""What every benchmark shares: the machine description, percentiles, results files, and an embedded stack.

The project's settings are read once and cached (`get_settings()`), so `start_stack()` sets DATABASE_URL,
REDIS_URL and ENGRAMLOG_DATA_DIR in the environment *before* anything imports infra.settings, infra.db or a
projection module. Benchmarks therefore import project modules inside functions, after `start_stack()`.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def machine() -> dict[str, Any]:
    """CPU count, CPU model, memory, platform and Python version of the machine running the benchmark."""
    info: dict[str, Any] = {"cpus": os.cpu_count(), "platform": platform.platform(),
                            "python": platform.python_version(), "processor": platform.processor() or None}
    with contextlib.suppress(Exception):  # psutil is a dependency; a missing figure must not fail a run
        import psutil

        info["memory_gib"] = round(psutil.virtual_memory().total / 2**30, 1)
        info["cpus_physical"] = psutil.cpu_count(logical=False)
    with contextlib.suppress(OSError):
        info["loadavg_1m_5m_15m"] = [round(x, 2) for x in os.getloadavg()]  # other work sharing the CPUs
    with contextlib.suppress(OSError, StopIteration):
        info["cpu_model"] = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text()
                                 .splitlines() if line.startswith("model name"))
    return info


def machine_line(info: dict[str, Any] | None = None) -> str:
    info = info or machine()
    return (f"machine: {info.get('cpus')} CPUs ({info.get('cpu_model') or info.get('processor')}), "
            f"{info.get('memory_gib', '?')} GiB, {info['platform']}, Python {info['python']}, "
            f"load average {info.get('loadavg_1m_5m_15m')}")


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default), q in [0, 100]."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low, high = math.floor(pos), math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def latency_stats(values: Sequence[float]) -> dict[str, float]:
    """p50, p95 and mean of latencies in ms, rounded for the results files."""
    return {"p50": round(percentile(values, 50), 2), "p95": round(percentile(values, 95), 2),
            "mean": round(sum(values) / len(values), 2) if values else float("nan")}


def measure_modes(send: Callable[[str, dict[str, Any]], dict[str, Any]], asked: Sequence[str],
                  modes: Mapping[str, dict[str, Any]], rounds: int,
                  count: Callable[[dict[str, Any]], int]) -> dict[str, dict[str, Any]]:
    """`rounds` rounds of every query in every mode (`send(query, the mode's extra fields)`: the API's answer),
    interleaved so the machine's load falls on every mode alike. Per mode: the API's own latency_ms (served_ms)
    and the call's wall time (wall_ms), the mean of `count(answer)`, and its served p50 against the first mode's."""
    served: dict[str, list[float]] = {m: [] for m in modes}
    wall: dict[str, list[float]] = {m: [] for m in modes}
    answered: dict[str, list[int]] = {m: [] for m in modes}
    for _ in range(rounds):
        for q in asked:
            for mode, extra in modes.items():
                started = time.perf_counter()
                out = send(q, extra)
                wall[mode].append((time.perf_counter() - started) * 1000)
                served[mode].append(out["latency_ms"])
                answered[mode].append(count(out))
    base = latency_stats(served[next(iter(modes))])["p50"]
    return {m: {"served_ms": latency_stats(served[m]), "wall_ms": latency_stats(wall[m]),
                "mean_results": round(sum(answered[m]) / len(answered[m]), 2),
                "p50_vs_current": round(latency_stats(served[m])["p50"] / base, 3)} for m in modes}


def print_modes(modes: Mapping[str, dict[str, Any]]) -> None:
    """measure_modes' figures, a line a mode."""
    for mode, r in modes.items():
        print(f"  {mode:22} served p50 {r['served_ms']['p50']:7.1f} ms  p95 {r['served_ms']['p95']:7.1f} ms  "
              f"wall p50 {r['wall_ms']['p50']:7.1f} ms  x{r['p50_vs_current']:.2f} of current  "
              f"results {r['mean_results']}")


def wait_projected(client: Any, position: int, names: tuple[str, ...] | None = None, timeout_s: float = 7200,
                   poll_s: float = 0.5) -> float:
    """Seconds until the named projections (every one by default) have applied `position`, as GET /v1/projections
    (the SDK client's `projections()`) reports them; TimeoutError after `timeout_s`, so no run measures a lagging
    read model. A projection's position is the last event of its own types it applied: no lag left is caught up."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout_s:
        ps = [p for p in client.projections() if names is None or p.name in names]
        if ps and all(p.position >= position or p.lag_events == 0 for p in ps):
            return time.perf_counter() - started
        time.sleep(poll_s)
    lagging = {p.name: p.lag_events for p in client.projections()
               if (names is None or p.name in names) and p.position < position and p.lag_events}
    raise TimeoutError(f"projections {', '.join(names) if names else 'all'} not at position {position} after "
                       f"{timeout_s}s (events still to apply: {lagging or 'none listed'})")


def loopback_client() -> Any:
    """A TestClient on a fresh app, calling from loopback (the keyless API answers loopback callers only, as the
    default tenant); enter it (`with`) to run the app's lifespan too. Import after `start_stack()`."""
    from fastapi.testclient import TestClient

    from api.app import create_app

    return TestClient(create_app(), base_url="http://127.0.0.1", client=("127.0.0.1", 50000))


def answered(r: Any) -> Any:
    """The response when it is a 200 or 201; any other ends the benchmark, naming the request and the reason."""
    if r.status_code not in (200, 201):
        raise SystemExit(f"{r.request.method} {r.request.url} answered {r.status_code}: {r.text[:300]}")
    return r


def ok(r: Any) -> Any:
    """The JSON body of a 200 or 201 answer (anything else ends the benchmark: `answered`)."""
    return answered(r).json()


def project_all(engine: Any, max_seconds: float = 1200) -> None:
    """Catch every registered projection up to the head of the log, in the registry's order, in this process."""
    from projections.registry import PROJECTORS
    from projections.runner import catch_up

    for p in PROJECTORS.values():
        catch_up(engine, p, 1000, max_seconds=max_seconds)


def cli_through(http: Any) -> None:
    """The CLI's commands (run with typer's CliRunner in this process) call the app through `http`, a loopback
    TestClient: each gets an SDK client whose httpx.Client is it (closed by its `with`, not by the command)."""
    from engramlog_client import Engramlog

    import cli.calls

    def make() -> Engramlog:
        c = Engramlog("http://127.0.0.1")
        c.http = http
        c.close = lambda: None  # type: ignore[method-assign]  # the TestClient is closed by its with
        return c

    cli.calls.client = make


def wide(console: Any) -> Any:
    """The console, or one 120 columns wide on the same file when output goes to a pipe or a log."""
    from rich.console import Console

    if console.is_terminal or console.width >= 120:
        return console
    return Console(file=console.file, width=120, no_color=console.no_color)


def stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S")


def save_result(name: str, result: dict[str, Any], output: Path | None = None) -> Path:
    path = output or RESULTS_DIR / f"{name}-{stamp()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1, default=str))
    return path


@contextlib.contextmanager
def start_stack(with_redis: bool = True) -> Iterator[dict[str, str]]:
    """An embedded PostgreSQL (+ pgvector) and Redis in a temp dir, migrated; or DATABASE_URL / REDIS_URL when
    set. Yields {"database_url", "database", "redis"}. Redis is there so the service path's wake-up sends
    succeed as in production; nothing consumes them (benchmarks run the projectors themselves). The servers die
    with this process, and it with its caller (infra/lifeline.py): a bench killed any way leaves none behind."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("ENGRAMLOG_LOG_LEVEL", "warning")
    data_dir = Path(tempfile.mkdtemp(prefix="engramlog-bench-"))
    os.environ.setdefault("ENGRAMLOG_DATA_DIR", str(data_dir))  # never pick up a stack.json from ./.engramlog
    servers: list[Any] = []
    where = {"database": "DATABASE_URL (external)", "redis": "REDIS_URL (external)" if with_redis else "none"}
    try:
        from infra import lifeline
        from infra.logging import configure_logging

        configure_logging(os.environ["ENGRAMLOG_LOG_LEVEL"])
        from stack.postgres import EmbeddedPostgres
        from stack.redis import EmbeddedRedis

        lifeline.follow_caller()  # a killed bench (or make) leaves no server behind
        if not os.environ.get("DATABASE_URL"):
            pg = EmbeddedPostgres(data_dir, die_with_parent=True)
            servers.append(pg)
            os.environ["DATABASE_URL"] = pg.start()
            where["database"] = "embedded PostgreSQL + pgvector (temp dir)"
        if with_redis and not os.environ.get("REDIS_URL"):
            redis = EmbeddedRedis(data_dir, die_with_parent=True)
            servers.append(redis)
            os.environ["REDIS_URL"] = redis.start()
            where["redis"] = "embedded redis-server (temp dir)"
        from migrations.runner import upgrade_to_head

        upgrade_to_head(os.environ["DATABASE_URL"])
        yield {"database_url": os.environ["DATABASE_URL"], **where}
    finally:
        with contextlib.suppress(Exception):
            from infra.db import get_engine

            get_engine().dispose()
        for server in reversed(servers):
            server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


def server_processes(engine: Any) -> list[Any]:
    """This machine's PostgreSQL server processes (postmaster and children), or [] when the server is elsewhere."""
    import psutil
    from sqlalchemy import text

    try:
        with engine.connect() as conn:
            backend = psutil.Process(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())
        postmaster = backend.parent()
        if postmaster is None or "postgres" not in postmaster.name():
            return []
        return [postmaster, *postmaster.children(recursive=True)]
    except (psutil.Error, OSError):
        return []


def server_cpu_seconds(engine: Any) -> float | None:
    """CPU seconds (user + system) used so far by the PostgreSQL server's processes, or None when the server is
    elsewhere. A process that ends between two readings (an autovacuum worker) takes its seconds with it, so a
    difference of two readings slightly undercounts."""
    processes = server_processes(engine)
    return processes_cpu_seconds(processes) if processes else None


def processes_cpu_seconds(processes: Sequence[Any]) -> float:
    """CPU seconds (user + system) used so far by `processes` (psutil), those that ended meanwhile left out."""
    import psutil

    total = 0.0
    for process in processes:
        try:
            cpu = process.cpu_times()
        except psutil.Error:
            continue  # a process that ended meanwhile
        total += cpu.user + cpu.system
    return total
