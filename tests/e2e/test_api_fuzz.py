"""The OpenAPI schema fuzzed with schemathesis (bench/fuzz.py) against the real stack: no input gets a 5xx.

One bounded, seeded round per mode (keyless: one default tenant from loopback; keys: a tenant key, plus a slice of
cases with a generated Authorization header), served by uvicorn on loopback with a real worker projecting, so
read-your-writes recalls are answered. `make fuzz` (python -m bench.fuzz) runs the longer, time-bounded search.
Below it, each 5xx a fuzz run found, as a plain test.
"""

from __future__ import annotations

import pytest
from conftest import WorkerProcess

from bench.fuzz import MODES, FuzzReport, fuzz_mode, load_schema, serve, wait_healthy

# Its cases reach POST /v1/projections/{name}/rebuild and /v1/forget, which replay whole projections: on a database of
# its own they replay this module's writes, not the whole session's.
pytestmark = pytest.mark.own_database

EXAMPLES = 2  # per operation and variant (bench/fuzz.py VARIANTS): ~20 operations x 3 x 2 per mode (make fuzz: 25)
SEED = 7


@pytest.fixture(scope="module")
def served(app):
    worker = WorkerProcess().start()  # one for both modes: read-your-writes recalls need the projections
    try:
        with serve(app) as base_url:
            wait_healthy(base_url)
            yield base_url, load_schema(base_url)
    finally:
        worker.stop()


@pytest.mark.timeout(900)  # a fixed number of cases, not a time budget: slower on busy shared cores
@pytest.mark.parametrize("mode", MODES)
def test_no_generated_input_gets_a_5xx(served, tenant, mode):
    base_url, schema = served
    report = FuzzReport()
    # The odd parameter values (bench/fuzz.py ODD_VALUES) are make fuzz's; this bounded round stays within the test
    # timeout. NUL and invalid UTF-8 in every path and query parameter: tests/e2e/test_api_no_5xx.py.
    fuzz_mode(schema, base_url, mode, tenant, report, examples=EXAMPLES, seed=SEED, odd_values=())
    print(f"\nfuzz {mode}: {report.cases} cases, statuses {dict(sorted(report.statuses.items()))}")
    assert not report.failures, "\n".join(report.failure_lines())
    # The run reached the handlers, not only the refusals in front of them: writes and reads were answered.
    assert report.cases >= 100, report.cases
    assert report.statuses[201] and report.statuses[200], report.statuses


def test_dead_letters_filtered_by_an_unknown_projection_is_404(http):
    # Found by the fuzzer: ?projection=%00 reached the SQL (NUL in a text parameter) and answered 500.
    # NUL in any query parameter is now refused before routing (api/parameters.py): a 422, still no 500.
    r = http.get("/v1/projections/dead-letters", params={"projection": "\x00à"})
    assert r.status_code == 422, r.text
    r = http.get("/v1/projections/dead-letters", params={"projection": "no-such-projection"})
    assert r.status_code == 404, r.text
    assert r.json()["error"] == "NotFound"
    assert http.get("/v1/projections/dead-letters", params={"projection": "memories"}).status_code == 200
