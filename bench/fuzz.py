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

    python -m bench.fuzz [--seconds 240] [--seed 0] [--examples 25] [--modes keyless,keys] [--output FILE]

Rounds go over every (mode, operation, variant) with `--examples` cases each, seed `seed + round`, until
`--seconds` have passed; the case count, the statuses and every failure (with a curl line) are printed, and the
exit status is 1 when a failure was found. tests/test_api_fuzz.py runs one bounded, seeded round in `make test`.
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
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODES = ("keyless", "keys")
# (name, schemathesis mode, strings over all of Unicode): valid inputs in plain text reach the handlers' depths;
# valid and invalid ones with lone surrogates (JSON carries one as "\ud800"), astral planes and NUL test the edges.
VARIANTS = (("positive", "positive", False), ("positive, any text", "positive", True),
            ("negative", "negative", True))
REQUEST_TIMEOUT_S = 60.0  # a healthy API answers every case far sooner; past this it is a failure (a stall)


@dataclass
class Failure:
    mode: str
    operation: str
    status: int | None
    detail: str
    curl: str


@dataclass
class FuzzReport:
    cases: int = 0
    unsendable: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    by_operation: Counter[str] = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    ungenerated: set[str] = field(default_factory=set)  # operation (mode) for which no case could be made
    seconds: float = 0.0

    def failure_lines(self) -> list[str]:
        return [f"[{f.mode}] {f.operation} → {f.status}: {f.detail}\n    {f.curl}" for f in self.failures]


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
    deadline = time.monotonic() + 120
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
    """The served /openapi.json."""
    import schemathesis

    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    schema.config.update(base_url=base_url)
    return schema


def _send(case: Any, base_url: str, session: Any, mode: str, report: FuzzReport) -> None:
    import requests

    operation = f"{case.operation.method.upper()} {case.operation.path}"
    try:
        response = case.call(base_url=base_url, session=session, timeout=REQUEST_TIMEOUT_S)
    except (requests.ConnectionError, requests.Timeout) as exc:
        report.cases += 1
        report.by_operation[operation] += 1
        report.failures.append(Failure(mode, operation, None, f"{type(exc).__name__}: {exc}"[:300],
                                       _curl(case, base_url)))
        return
    except Exception:  # the client cannot encode this case (a header value, a URL): nothing reached the API
        report.unsendable += 1
        return
    report.cases += 1
    report.by_operation[operation] += 1
    report.statuses[response.status_code] += 1
    if response.status_code >= 500:
        report.failures.append(Failure(mode, operation, response.status_code, response.text[:300],
                                       _curl(case, base_url)))


def _curl(case: Any, base_url: str) -> str:
    try:
        return str(case.as_curl_command())[:2000]
    except Exception as exc:
        return f"(no curl: {type(exc).__name__})"


def fuzz_round(schema: Any, base_url: str, mode: str, report: FuzzReport, *, examples: int, seed: int,
               headers: dict[str, str] | None = None, deadline: float | None = None,
               known: dict[str, str] | None = None) -> None:
    """One pass over every operation in each of VARIANTS, `examples` cases each, seeded; operations with a
    path parameter named in `known` (an existing memory, a recall) once more with that value fixed, so their
    bodies reach past the 404 of a random id."""
    import hypothesis
    import hypothesis.errors
    import requests
    from hypothesis import HealthCheck, Phase, Verbosity
    from schemathesis import GenerationMode

    settings = hypothesis.settings(max_examples=examples, deadline=None, database=None, derandomize=False,
                                   phases=[Phase.explicit, Phase.generate], verbosity=Verbosity.quiet,
                                   suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
    with requests.Session() as session:
        for result in schema.get_all_operations():
            operation = result.ok()
            fixed = {k: v for k, v in (known or {}).items() if f"{{{k}}}" in operation.path}
            for path_parameters in ([None, fixed] if fixed else [None]):
                for variant, generation_mode, any_text in VARIANTS:
                    if deadline is not None and time.monotonic() > deadline:
                        return
                    generation = schema.config.generation
                    generation.codec, generation.allow_x00 = (None, True) if any_text else ("utf-8", False)
                    strategy = operation.as_strategy(generation_mode=GenerationMode(generation_mode), headers=headers,
                                                     path_parameters=path_parameters)

                    @hypothesis.seed(seed)
                    @settings
                    @hypothesis.given(strategy)
                    def run(case: Any) -> None:
                        if deadline is None or time.monotonic() < deadline:
                            _send(case, base_url, session, mode, report)

                    try:
                        run()
                    except hypothesis.errors.Unsatisfiable:  # e.g. no invalid input exists for an operation
                        report.ungenerated.add(f"{operation.method.upper()} {operation.path} "
                                               f"({variant}{', known ids' if path_parameters else ''})")


# Raw (already percent-encoded) values sent in every query and path parameter of every operation: NUL, a lone
# surrogate and stray bytes (refused before routing, api/parameters.py), and what a typed parameter must refuse
# with a 422 rather than fail on: integers past bigint, floats past double, words for numbers, a long string.
ODD_VALUES = ("%00", "a%00b", "%ED%A0%80", "%FF", "x%C0%80", "%5Cu0000", "99999999999999999999999999",
              "-99999999999999999999", "9223372036854775808", "-1", "0", "1e309", "NaN", "-inf", "", "%20",
              "%F0%9F%92%A9", "true", "%5B%5D", "x" * 5000)


def odd_round(schema: Any, base_url: str, mode: str, report: FuzzReport, *, seed: int,
              headers: dict[str, str] | None = None, deadline: float | None = None,
              known: dict[str, str] | None = None, values: tuple[str, ...] = ODD_VALUES) -> None:
    """Every query and path parameter of every operation, one at a time, set to each of ODD_VALUES; the rest of
    the request (body, other parameters) one valid generated case, so the odd value is what the API judges."""
    import warnings
    from urllib.parse import quote, urlencode

    import hypothesis
    import requests
    from schemathesis import GenerationMode

    if not values:
        return
    schema.config.generation.codec, schema.config.generation.allow_x00 = "utf-8", False
    with requests.Session() as session, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # hypothesis: .example() outside a test
        for result in schema.get_all_operations():
            operation = result.ok()
            fixed = {k: v for k, v in (known or {}).items() if f"{{{k}}}" in operation.path}
            strategy = operation.as_strategy(generation_mode=GenerationMode.POSITIVE, headers=headers,
                                             path_parameters=fixed or None)
            try:
                case = hypothesis.find(strategy, lambda _: True, settings=hypothesis.settings(
                    database=None, max_examples=5, deadline=None), random=__import__("random").Random(seed))
            except Exception:  # no valid case for this operation
                report.ungenerated.add(f"{operation.method.upper()} {operation.path} (odd values)")
                continue
            params = operation.definition.raw.get("parameters", [])
            targets = [(p["in"], p["name"]) for p in params if p.get("in") in ("query", "path")]
            for where, name in targets:
                for odd in values:
                    if deadline is not None and time.monotonic() > deadline:
                        return
                    path = operation.path
                    for k, v in (case.path_parameters or {}).items():
                        path = path.replace(f"{{{k}}}", odd if (where, name) == ("path", k) else quote(str(v), safe=""))
                    query = {k: v for k, v in (case.query or {}).items() if k != name}
                    url = f"{base_url}{path}?{urlencode(query, doseq=True)}"
                    if where == "query":
                        url += f"{'&' if query else ''}{quote(name)}={odd}"
                    _send_raw(session, operation.method.upper(), url, case, headers, mode, report,
                              f"{operation.method.upper()} {operation.path}")


def _send_raw(session: Any, method: str, url: str, case: Any, headers: dict[str, str] | None, mode: str,
              report: FuzzReport, operation: str) -> None:
    import requests

    body = case.body if str(case.media_type or "").endswith("json") else None
    kwargs: dict[str, Any] = {"json": body} if body is not None else {}
    try:
        response = session.request(method, url, headers=headers or {}, timeout=REQUEST_TIMEOUT_S, **kwargs)
    except (requests.ConnectionError, requests.Timeout) as exc:
        report.cases += 1
        report.by_operation[operation] += 1
        report.failures.append(Failure(mode, operation, None, f"{type(exc).__name__}: {exc}"[:300], url[:2000]))
        return
    except Exception:
        report.unsendable += 1
        return
    report.cases += 1
    report.by_operation[operation] += 1
    report.statuses[response.status_code] += 1
    if response.status_code >= 500:
        report.failures.append(Failure(mode, operation, response.status_code, response.text[:300],
                                       f"curl -X {method} '{url[:2000]}'"))


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
    parser.add_argument("--examples", type=int, default=25, help="cases per operation, mode and round")
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
