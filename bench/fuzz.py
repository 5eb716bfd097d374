"""Fuzz the HTTP API from its own OpenAPI schema with schemathesis: no input may get a 5xx.

The API is served by uvicorn on loopback (a thread of this process) over a real stack: PostgreSQL + pgvector,
Redis and a Dramatiq worker, so read-your-writes recalls are answered, not left to time out. Every operation is
fuzzed with valid inputs in plain text, valid inputs over all of Unicode (lone surrogates, astral planes, NUL) and
invalid inputs (VARIANTS), then each query and path parameter with each of ODD_VALUES (NUL, a lone surrogate, stray
bytes, integers past bigint, ...) in an otherwise valid case; operations on a memory or a recall once more with an
existing one's id. Two modes:
keyless (one default tenant, loopback) and API keys on (a tenant key; a slice of the cases with a generated
Authorization header instead). A 5xx (a 503 included: the database is up throughout), a dropped connection or a
timeout is a failure; a case the HTTP client cannot even send (a header it will not encode) is counted apart.

    python -m bench.fuzz [--seconds 240] [--seed 0] [--examples 10] [--modes keyless,keys] [--output FILE]

Rounds go over every (mode, operation, variant) with `--examples` cases each, seed `seed + round`, the operations
in an order of the round's seed (a round the deadline cuts short reaches other operations first in the next), until
`--seconds` have passed; the case count, the statuses and every failure (with a curl line) are printed, and the
exit status is 1 when a failure was found. tests/e2e/test_api_fuzz.py runs one bounded, seeded round in `make
test`. The rounds and how a case is recorded: bench/fuzz_rounds.py; here, the stack they run against.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.fuzz_rounds import ODD_VALUES, REQUEST_TIMEOUT_S, FuzzReport, fuzz_round, odd_round

ROOT = Path(__file__).resolve().parent.parent
MODES = ("keyless", "keys")
START_TIMEOUT_S = 900.0  # the API's start-up (its models warmed) on a loaded machine: minutes, not seconds
@contextlib.contextmanager
def serve(app: Any) -> Iterator[str]:
    """Serve `app` with uvicorn on 127.0.0.1 (a free port) in a thread; yields its base URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", timeout_keep_alive=30))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="fuzz-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


@contextlib.contextmanager
def keyless_tenant(tenant: str) -> Iterator[None]:
    """Keyless mode writing to `tenant` instead of "default", so a fuzz run leaves other tests' data alone."""
    import api.context

    saved = api.context.DEFAULT_TENANT
    api.context.DEFAULT_TENANT = tenant
    try:
        yield
    finally:
        api.context.DEFAULT_TENANT = saved


@contextlib.contextmanager
def keys_on(tenant: str) -> Iterator[str]:
    """API keys on for this process's API (one tenant key); yields the key."""
    import api.context
    from infra.settings import get_settings, replace

    key = f"fuzz-{uuid.uuid4().hex}"
    settings = replace(get_settings(), api_keys={key: tenant}, operator_keys=())
    saved = api.context.get_settings
    api.context.get_settings = lambda: settings  # type: ignore[assignment]  # the fuzz run's keys, restored after
    try:
        yield key
    finally:
        api.context.get_settings = saved


def wait_healthy(base_url: str, timeout_s: float = 180.0) -> None:
    """Until /healthz is 200: database, Redis and a worker (its heartbeat) up, so that read-your-writes recalls
    are answered rather than left to time out while the worker loads its model."""
    import httpx

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(f"{base_url}/healthz", timeout=10).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{base_url}/healthz did not answer 200 within {timeout_s:.0f}s (no worker?)")
        time.sleep(0.2)


def load_schema(base_url: str) -> Any:
    """The served /openapi.json (fetched with the cases' own timeout: building it takes seconds on a loaded machine,
    past schemathesis's 10 s)."""
    import httpx
    import schemathesis

    served = httpx.get(f"{base_url}/openapi.json", timeout=REQUEST_TIMEOUT_S)
    served.raise_for_status()
    schema = schemathesis.openapi.from_dict(served.json())
    schema.config.update(base_url=base_url)
    return schema


def known_ids(base_url: str, headers: dict[str, str] | None = None) -> dict[str, str]:
    """A memory and a recall of the caller's own."""
    import httpx

    with httpx.Client(base_url=base_url, headers=headers or {}, timeout=REQUEST_TIMEOUT_S) as client:
        memory = client.post("/v1/memories", json={"content": "The fuzzer's own note: Alice keeps bees in Porto",
                                                   "must_keep": True})
        memory.raise_for_status()
        recall = client.post("/v1/recall", json={"query": "who keeps bees in Porto?"})
        recall.raise_for_status()
    return {"memory_id": memory.json()["memory_id"], "recall_id": recall.json()["recall_id"]}


def fuzz_mode(schema: Any, base_url: str, mode: str, tenant: str, report: FuzzReport, *, examples: int,
              seed: int, deadline: float | None = None, odd_values: tuple[str, ...] = ODD_VALUES) -> None:
    """One round in `mode`: keyless writes as `tenant` with no key; keys sends a tenant key on most cases, and a
    quarter as many cases with a generated Authorization header (the auth path's own inputs)."""
    if mode == "keyless":
        with keyless_tenant(tenant):
            known = known_ids(base_url)
            fuzz_round(schema, base_url, mode, report, examples=examples, seed=seed, deadline=deadline,
                       known=known)
            odd_round(schema, base_url, mode, report, seed=seed, deadline=deadline, known=known, values=odd_values)
        return
    with keys_on(tenant) as key:
        headers = {"Authorization": f"Bearer {key}"}
        known = known_ids(base_url, headers)
        fuzz_round(schema, base_url, mode, report, examples=examples, seed=seed, deadline=deadline,
                   headers=headers, known=known)
        odd_round(schema, base_url, mode, report, seed=seed, deadline=deadline, headers=headers, known=known,
                  values=odd_values)
        fuzz_round(schema, base_url, "keys/auth", report, examples=max(1, examples // 4), seed=seed,
                   deadline=deadline)


def _worker() -> subprocess.Popen[bytes]:
    """The Dramatiq worker, dying with this process (its master, and each worker process with the master, as
    under `engramlog up`: infra/lifeline.py)."""
    import os
    import signal

    from infra import lifeline

    cmd = [sys.executable, "-m", "dramatiq", "workers.main", "--processes", "1", "--threads", "2",
           "--queues", "projections", "ingest"]
    return subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, env={**os.environ, lifeline.ENV: "1"},
                            preexec_fn=lifeline.preexec(signal.SIGKILL))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=240.0, help="how long to fuzz (default 240)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--examples", type=int, default=10, help="cases per operation, mode and round")
    parser.add_argument("--modes", default=",".join(MODES), help="keyless,keys (default both)")
    parser.add_argument("--output", type=Path, help="save the summary as JSON here")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in MODES for m in modes):
        parser.error(f"--modes: a comma-separated subset of {', '.join(MODES)}")

    import os
    import signal

    from bench.common import machine, machine_line, save_result, start_stack

    print(machine_line(machine()), flush=True)
    with start_stack() as where:
        print(f"stack: {where['database']}, {where['redis']}, one Dramatiq worker, uvicorn on loopback", flush=True)
        worker = _worker()
        try:
            from api.app import create_app

            report = _run(create_app(), modes, args.seconds, args.examples, args.seed)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(worker.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.wait(30)
    _print(report)
    if args.output:
        save_result("fuzz", {"machine": machine(), "seconds": report.seconds, "cases": report.cases,
                             "unsendable": report.unsendable, "statuses": dict(report.statuses),
                             "by_operation": dict(report.by_operation),
                             "failures": [f.__dict__ for f in report.failures]}, args.output)
    sys.exit(1 if report.failures else 0)


def _run(app: Any, modes: list[str], seconds: float, examples: int, seed: int) -> FuzzReport:
    report = FuzzReport()
    started = time.monotonic()
    deadline = started + seconds
    with serve(app) as base_url:
        wait_healthy(base_url)
        schema = load_schema(base_url)
        tenant = f"fuzz-{uuid.uuid4().hex[:8]}"
        round_no = 0
        while time.monotonic() < deadline:
            for mode in modes:
                fuzz_mode(schema, base_url, mode, tenant, report, examples=examples, seed=seed + round_no,
                          deadline=deadline)
            round_no += 1
            print(f"round {round_no}: {report.cases} cases, {len(report.failures)} failures, "
                  f"{time.monotonic() - started:.0f}s", flush=True)
    report.seconds = round(time.monotonic() - started, 1)
    return report


def _print(report: FuzzReport) -> None:
    print(f"\n{report.cases} cases in {report.seconds:.0f}s ({report.unsendable} more the client could not send)")
    print("statuses: " + ", ".join(f"{s}: {n}" for s, n in sorted(report.statuses.items())))
    for operation, n in sorted(report.by_operation.items()):
        print(f"  {n:6d}  {operation}")
    if report.ungenerated:
        print("no case could be generated for: " + ", ".join(sorted(report.ungenerated)))
    print(f"{len(report.failures)} failures (5xx, dropped connection or timeout)")
    for line in report.failure_lines():
        print(line)


if __name__ == "__main__":
    main()
