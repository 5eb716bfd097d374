"""Projection status and metrics: a tenant key sees its own events' progress, never other tenants' traffic.

Operator keys (and the keyless single-tenant API) see the global head, lag and this process's counters.
"""

from __future__ import annotations

import re
import uuid

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text


@pytest.fixture
def keyed(app, monkeypatch):
    import api.context
    from infra.settings import get_settings, replace

    suffix = uuid.uuid4().hex[:8]
    names = {"a": f"tsA-{suffix}", "b": f"tsB-{suffix}", "ops": f"tsOps-{suffix}"}
    keys = {who: f"k{who}-{uuid.uuid4().hex}" for who in names}
    settings = replace(get_settings(), api_keys={keys[w]: names[w] for w in names}, operator_keys=(keys["ops"],))
    monkeypatch.setattr(api.context, "get_settings", lambda: settings)
    clients = {w: TestClient(app, headers={"Authorization": f"Bearer {keys[w]}"}) for w in names}
    with TestClient(app) as anonymous:
        yield {**clients, "anon": anonymous, "names": names}


def lag_lines(body: str) -> dict[str, float]:
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r'^engramlog_projection_lag_events\{projection="(\w+)"\} ([0-9.e+-]+)$', body, re.M)}


def test_a_tenant_sees_only_its_own_head_and_lag(keyed, engine):
    a, b, ops = keyed["a"], keyed["b"], keyed["ops"]
    written = a.post("/v1/memories/batch", json={"memories": [
        {"content": f"tenant status memory {i}", "must_keep": True} for i in range(3)]})
    assert written.status_code == 201, written.text
    with engine.connect() as conn:
        a_head = conn.execute(text("SELECT max(position) FROM events WHERE tenant = :t"),
                              {"t": keyed["names"]["a"]}).scalar_one()
        a_events = conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t"),
                                {"t": keyed["names"]["a"]}).scalar_one()

    # B wrote nothing: nothing of A's traffic shows, whatever the projections' state.
    seen_by_b = b.get("/v1/projections")
    assert seen_by_b.status_code == 200, seen_by_b.text
    for p in seen_by_b.json()["projections"]:
        assert (p["head"], p["position"], p["lag_events"], p["lag_seconds"], p["updated_at"]) == (0, 0, 0, 0.0, None), p

    for p in a.get("/v1/projections").json()["projections"]:
        assert p["head"] == a_head and 0 <= p["lag_events"] <= a_events and p["position"] <= a_head, p

    with engine.connect() as conn:
        global_head = conn.execute(text("SELECT max(position) FROM events")).scalar_one()
    for p in ops.get("/v1/projections").json()["projections"]:
        assert p["head"] == global_head, p

    # /metrics: a tenant key gets its own lag and nothing of this process's (all tenants') counters.
    b_metrics = b.get("/metrics")
    assert b_metrics.status_code == 200
    assert set(lag_lines(b_metrics.text).values()) == {0.0}
    assert "engramlog_events_appended_total" not in b_metrics.text
    ops_metrics = ops.get("/metrics").text
    assert "engramlog_events_appended_total" in ops_metrics and lag_lines(ops_metrics)
    assert keyed["anon"].get("/metrics").status_code == 401
