"""Tenant isolation with ENGRAMLOG_API_KEYS-style keys: two keys, two tenants, no way across.

The app is built the way `ENGRAMLOG_API_KEYS="key1:tenantA,key2:tenantB"` builds it: the settings' api_keys
come from parsing that string, patched in where the API reads them.
"""

from __future__ import annotations

import uuid

import pytest
from conftest import wait_until
from fastapi.testclient import TestClient
from sqlalchemy import text

from tests.log_support import opened_events


@pytest.fixture
def two_tenants(monkeypatch):
    import api.context
    from api.app import create_app
    from infra.settings import get_settings, parse_api_keys, replace

    suffix = uuid.uuid4().hex[:8]
    tenant_a, tenant_b = f"tenA-{suffix}", f"tenB-{suffix}"
    key_a, key_b = f"ka-{uuid.uuid4().hex}", f"kb-{uuid.uuid4().hex}"
    settings = replace(get_settings(), api_keys=parse_api_keys(f"{key_a}:{tenant_a}, {key_b}:{tenant_b}"))
    assert settings.multi_tenant
    monkeypatch.setattr(api.context, "get_settings", lambda: settings)
    app = create_app()
    with TestClient(app) as anonymous:
        yield {
            "a": TestClient(app, headers={"Authorization": f"Bearer {key_a}"}),
            "b": TestClient(app, headers={"Authorization": f"Bearer {key_b}"}),
            "anon": anonymous, "tenant_a": tenant_a, "tenant_b": tenant_b, "key_a": key_a,
        }


def events_of(engine, tenant: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t"), {"t": tenant}).scalar_one()


def test_missing_or_unknown_key_is_401(two_tenants, engine):
    anon = two_tenants["anon"]
    requests = [("post", "/v1/memories", {"json": {"content": "sneaky"}}),
                ("post", "/v1/memories/batch", {"json": {"memories": [{"content": "sneaky"}]}}),
                ("post", "/v1/events", {"json": {"events": [{"type": "MemoryRecorded", "data": {
                    "memory_id": str(uuid.uuid4()), "content": "sneaky"}}]}}),
                ("post", "/v1/recall", {"json": {"query": "anything"}}),
                ("get", f"/v1/memories/{uuid.uuid4()}", {}),
                ("get", "/v1/events", {}),
                ("get", "/v1/projections", {}),
                ("post", "/v1/projections/memories/rebuild", {})]
    bad_headers = [{}, {"Authorization": "Bearer not-a-key"}, {"Authorization": "Bearer "},
                   {"Authorization": f"Basic {two_tenants['key_a']}"}, {"Authorization": two_tenants["key_a"]},
                   {"Authorization": f"Bearer {two_tenants['key_a']}x"},
                   {"Authorization": f"Bearer {two_tenants['key_a'][:-1]}"}]
    for method, path, kwargs in requests:
        for headers in bad_headers:
            r = getattr(anon, method)(path, headers=headers, **kwargs)
            assert r.status_code == 401, (method, path, headers, r.status_code, r.text)
            assert r.headers.get("www-authenticate") == "Bearer"
    assert events_of(engine, two_tenants["tenant_a"]) == events_of(engine, two_tenants["tenant_b"]) == 0
    with engine.connect() as conn:
        assert not [e for e in opened_events(conn, "tenant = 'default' AND type = 'MemoryRecorded'")
                    if e.data.get("content") == "sneaky"]
    # Liveness stays open; metrics show traffic, so they need a key (a tenant's own lag, or an operator's all).
    assert anon.get("/healthz").status_code in (200, 503)
    assert anon.get("/metrics").status_code == 401


def test_neither_tenant_can_read_recall_or_list_the_others_data(two_tenants, engine, worker):
    a, b = two_tenants["a"], two_tenants["b"]
    secret_a = "Project Nightingale launches on the ninth of March from hangar seven"
    secret_b = "The vault combination is stored in the blue notebook under the stairs"
    wa = a.post("/v1/memories", json={"content": secret_a, "agent_id": "shared-agent", "idempotency_key": "same"})
    wb = b.post("/v1/memories", json={"content": secret_b, "agent_id": "shared-agent", "idempotency_key": "same"})
    assert wa.status_code == wb.status_code == 201, (wa.text, wb.text)
    # The same idempotency key in two tenants is two writes, two memories: keys are per tenant.
    assert wa.json()["memory_id"] != wb.json()["memory_id"]
    assert wa.json()["position"] != wb.json()["position"]
    # The same stream id in two tenants is two streams: both appends at expected version 0 succeed.
    shared_memory_id = str(uuid.uuid4())
    own_last = {}  # each tenant's last write: its min_position (another tenant's is beyond its own log's head)
    for client, content in ((a, "A's copy of a shared id"), (b, "B's copy of a shared id")):
        r = client.post("/v1/events", json={"events": [{"type": "MemoryRecorded", "expected_version": 0,
                                                         "data": {"memory_id": shared_memory_id,
                                                                  "content": content}}]})
        assert r.status_code == 201, r.text
        own_last[id(client)] = r.json()["positions"][0]
    last = max(wa.json()["position"], wb.json()["position"], *own_last.values())

    from projections.registry import PROJECTORS
    from projections.runner import has_reached

    def projected() -> bool:
        with engine.connect() as conn:
            return all(has_reached(conn, p, last) for p in PROJECTORS.values())

    assert wait_until(projected, timeout=120)

    # Each sees its own memory ...
    assert a.get(f"/v1/memories/{wa.json()['memory_id']}").json()["content"] == secret_a
    assert b.get(f"/v1/memories/{wb.json()['memory_id']}").json()["content"] == secret_b
    # ... and not the other's, which answers exactly like a memory that does not exist.
    cross = a.get(f"/v1/memories/{wb.json()['memory_id']}")
    assert cross.status_code == 404, cross.text
    assert b.get(f"/v1/memories/{wa.json()['memory_id']}").status_code == 404
    assert a.get(f"/v1/memories/{shared_memory_id}").json()["content"] == "A's copy of a shared id"
    assert b.get(f"/v1/memories/{shared_memory_id}").json()["content"] == "B's copy of a shared id"

    # Recall, even with the other tenant's exact words and the same agent id, returns only one's own.
    for client, own, others_words, own_ids, others_copy in (
            (a, secret_a, secret_b, {wa.json()["memory_id"], shared_memory_id}, "B's copy of a shared id"),
            (b, secret_b, secret_a, {wb.json()["memory_id"], shared_memory_id}, "A's copy of a shared id")):
        for query in (others_words, own, "shared id copy"):
            for scope in ({}, {"agent_id": "shared-agent"}):
                r = client.post("/v1/recall", json={"query": query, "k": 10, "min_position": own_last[id(client)],
                                                    **scope})
                assert r.status_code == 200, r.text
                results = r.json()["results"]
                assert {x["memory_id"] for x in results} <= own_ids, (query, results)
                contents = {x["content"] for x in results}
                assert others_words not in contents and others_copy not in contents, (query, results)
        # Its own memory is found (the filter is not simply returning nothing).
        r = client.post("/v1/recall", json={"query": own, "k": 1}).json()["results"]
        assert [x["content"] for x in r] == [own]

    # The log: each lists only its own events, by any filter, including the other's stream ids.
    for client, tenant, other_memory in ((a, two_tenants["tenant_a"], wb.json()["memory_id"]),
                                         (b, two_tenants["tenant_b"], wa.json()["memory_id"])):
        listed = client.get("/v1/events", params={"limit": 1000}).json()["events"]
        assert len(listed) == events_of(engine, tenant)
        with engine.connect() as conn:
            own_positions = set(conn.execute(text("SELECT position FROM events WHERE tenant = :t"),
                                             {"t": tenant}).scalars())
        assert {e["position"] for e in listed} == own_positions
        assert client.get("/v1/events", params={"stream_id": f"memory-{other_memory}"}).json()["events"] == []
        served = client.get("/v1/events", params={"type": "RecallServed", "limit": 1000}).json()["events"]
        assert len(served) == 7  # its own recalls only
        # Its own writes, and the governor's decisions on them (requested by the same key).
        assert all(e["metadata"].get("requested_by", e["metadata"]["actor"]).startswith("api-key:") for e in listed)
        # Pagination does not leak either: after/before cover the other tenant's positions and find nothing.
        others = (wa if client is b else wb).json()["position"]
        window = client.get("/v1/events", params={"after": others - 1, "before": others + 1}).json()["events"]
        assert window == []
