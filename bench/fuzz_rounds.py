"""The fuzz rounds bench/fuzz.py runs: cases generated from the API's OpenAPI schema by schemathesis (VARIANTS), and
each query and path parameter set to each of ODD_VALUES, every case sent and recorded one way (sent, FuzzReport.
record): a 5xx, a dropped connection or a timeout is a failure, with a curl line to replay it."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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

    def record(self, mode: str, operation: str, status: int | None, detail: str, curl: Callable[[], str]) -> None:
        """One case the API received: its status (None: the connection dropped or timed out); a failure when none
        came back or a 5xx did."""
        self.cases += 1
        self.by_operation[operation] += 1
        if status is not None:
            self.statuses[status] += 1
        if status is None or status >= 500:
            self.failures.append(Failure(mode, operation, status, detail[:300], curl()))

    def failure_lines(self) -> list[str]:
        return [f"[{f.mode}] {f.operation} → {f.status}: {f.detail}\n    {f.curl}" for f in self.failures]


def sent(report: FuzzReport, mode: str, operation: str, send: Callable[[], Any], curl: Callable[[], str]) -> None:
    """Send one case (`send()` answers its response) and record it: the one way every case is counted."""
    import requests

    try:
        response = send()
    except (requests.ConnectionError, requests.Timeout) as exc:
        report.record(mode, operation, None, f"{type(exc).__name__}: {exc}", curl)
        return
    except Exception:  # the client cannot encode this case (a header value, a URL): nothing reached the API
        report.unsendable += 1
        return
    report.record(mode, operation, response.status_code, response.text, curl)


def _send(case: Any, base_url: str, session: Any, mode: str, report: FuzzReport) -> None:
    sent(report, mode, f"{case.operation.method.upper()} {case.operation.path}",
         lambda: case.call(base_url=base_url, session=session, timeout=REQUEST_TIMEOUT_S),
         lambda: _curl(case, base_url))


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
    operations = [result.ok() for result in schema.get_all_operations()]
    # In an order of the seed's: a round cut short by the deadline reaches other operations first next time (a
    # fixed order never fuzzed the schema's later operations within `make fuzz`'s 240 s).
    random.Random(seed).shuffle(operations)
    with requests.Session() as session:
        for operation in operations:
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
    body = case.body if str(case.media_type or "").endswith("json") else None
    kwargs: dict[str, Any] = {"json": body} if body is not None else {}
    sent(report, mode, operation,
         lambda: session.request(method, url, headers=headers or {}, timeout=REQUEST_TIMEOUT_S, **kwargs),
         lambda: f"curl -X {method} '{url[:2000]}'")


__all__ = ["ODD_VALUES", "REQUEST_TIMEOUT_S", "VARIANTS", "Failure", "FuzzReport", "fuzz_round", "odd_round",
           "sent"]
