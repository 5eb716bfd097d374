"""One tenant's hostile source file holds no one else up (issue 14 §3): a 1 MiB Python file of chained calls
(`x = a.f().f()...`, each call's receiver the whole chain before it) was parsed in quadratic time (about 50 min)
inside the code projector's transaction. Now the parse is linear and each event's apply is bounded
(ENGRAMLOG_PROJECTION_EVENT_TIMEOUT_S): another tenant's memory is recallable well before one event's time limit
(45 s against 90 s: a memories projection held up by the code one would wait that long), and its code is indexed
once the hostile file is applied or parked, through a real worker."""

from __future__ import annotations

import time
import uuid

import pytest
from conftest import wait_until
from fastapi.testclient import TestClient
from sqlalchemy import text

HOSTILE = "x = a" + ".f()" * ((1024 * 1024 - 8) // 4) + "\n"


@pytest.fixture
def two_tenants(monkeypatch):
    import api.context
    from api.app import create_app
    from infra.settings import get_settings, parse_api_keys, replace

    suffix = uuid.uuid4().hex[:8]
    keys = {"a": f"ka-{uuid.uuid4().hex}", "b": f"kb-{uuid.uuid4().hex}"}
    settings = replace(get_settings(), api_keys=parse_api_keys(
        f"{keys['a']}:hostile-{suffix}, {keys['b']}:victim-{suffix}"))
    monkeypatch.setattr(api.context, "get_settings", lambda: settings)
    app = create_app()
    with TestClient(app) as c_a, TestClient(app) as c_b:
        c_a.headers["Authorization"], c_b.headers["Authorization"] = f"Bearer {keys['a']}", f"Bearer {keys['b']}"
        yield {"a": c_a, "b": c_b, "victim": f"victim-{suffix}"}


def _recalls(client: TestClient, memory_id: str, query: str) -> bool:
    r = client.post("/v1/recall", json={"query": query})
    return r.status_code == 200 and any(str(x.get("memory_id")) == memory_id for x in r.json()["results"])


@pytest.mark.timeout(900)  # a real worker parsing a 1 MiB file on 2 busy shared cores
def test_a_hostile_file_in_one_tenant_holds_no_other_tenant(two_tenants, engine, start_worker) -> None:
    a, b = two_tenants["a"], two_tenants["b"]
    assert len(HOSTILE.encode()) <= 1024 * 1024
    start_worker(extra_env={"ENGRAMLOG_PROJECTION_EVENT_TIMEOUT_S": "90"})
    warm = b.post("/v1/memories", json={"content": "The staging cluster runs in the Frankfurt region",
                                        "idempotency_key": "warm"}).json()
    assert wait_until(lambda: _recalls(b, warm["memory_id"], "which region runs the staging cluster"), 180)

    r = a.post("/v1/code/evil/files", json={"files": [{"path": "evil/chain.py", "content": HOSTILE}]})
    assert r.status_code == 200, r.text
    time.sleep(1)  # the worker has picked the hostile file up
    started = time.monotonic()
    fact = b.post("/v1/memories", json={"content": "The billing database backups are kept for ninety days",
                                        "idempotency_key": "fact"})
    assert fact.status_code == 201, fact.text
    assert wait_until(lambda: _recalls(b, fact.json()["memory_id"], "how long are billing backups kept"), 45,
                      interval=0.2), "another tenant's memory was not recallable within 45 s"
    took = time.monotonic() - started

    # The code projector itself moves on: the victim's own file is indexed once the hostile one is applied or
    # parked (each attempt bounded by the event time limit).
    ok = b.post("/v1/code/app/files", json={"files": [{"path": "app/util.py",
                                                      "content": "def parse_port(s):\n    return int(s)\n"}]})
    assert ok.status_code == 200, ok.text
    assert wait_until(lambda: b.get("/v1/code/app/symbols/app.util.parse_port").status_code == 200, 240, 0.5)
    with engine.connect() as conn:
        letters = conn.execute(text("SELECT status FROM projection_dead_letters WHERE projection = 'code' AND tenant"
                                    " = :t"), {"t": two_tenants["victim"]}).scalars().all()
    assert letters == []  # the victim's events were never blamed
    print(f"victim memory recallable after {took:.2f} s")
