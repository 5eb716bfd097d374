"""GET /v1/events/export: an operator key streams its tenant's log as JSON lines, in log order across pages,
filtered by type; a tenant key is refused (403), nothing exported."""

from __future__ import annotations

import json

import api.context
import api.routes.events
from infra.settings import get_settings, replace
from services.remember import MemoryInput, remember

META = {"actor": "test", "correlation_id": "export-http"}


def test_an_operator_streams_the_log_as_json_lines(client, engine, tenant, monkeypatch):
    monkeypatch.setattr(api.routes.events, "EXPORT_PAGE", 2)  # several pages for five events
    remember(engine, tenant, [MemoryInput(f"fact number {i}", must_keep=True) for i in range(3)], META)
    remember(engine, "other-" + tenant, [MemoryInput("not this tenant's", must_keep=True)], META)
    key = f"key-{tenant}"
    settings = replace(get_settings(), api_keys={key: tenant}, operator_keys=(key,))
    monkeypatch.setattr(api.context, "get_settings", lambda: settings)
    r = client.get("/v1/events/export")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    events = [json.loads(line) for line in r.text.splitlines()]
    page = client.get("/v1/events", params={"limit": 1000}).json()["events"]
    assert [e["position"] for e in events] == [e["position"] for e in page]
    assert len(events) == 6 and {e["type"] for e in events} == {"MemoryRecorded", "MemoryAdmitted"}
    recorded = client.get("/v1/events/export", params={"type": "MemoryRecorded"}).text.splitlines()
    assert [json.loads(line)["data"]["content"] for line in recorded] == [f"fact number {i}" for i in range(3)]


def test_a_tenant_key_may_not_export(client):
    r = client.get("/v1/events/export")
    assert r.status_code == 403 and "operator" in r.json()["detail"]
