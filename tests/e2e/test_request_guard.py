"""Every request's correlation id: the caller's, or a new one; answered as a header on every answer, refusals
included, and carried into the events the request appends (api/guard.py)."""

from __future__ import annotations

import os
import uuid

from fastapi.testclient import TestClient

from tests.log_support import opened_events


def test_the_callers_correlation_id_is_answered_and_recorded(http, engine):
    correlation_id = f"guard-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    content = f"The guard test's write {correlation_id}"
    r = http.post("/v1/memories", json={"content": content, "must_keep": True},
                  headers={"X-Correlation-ID": correlation_id})
    assert r.status_code == 201, r.text
    assert r.headers["x-correlation-id"] == correlation_id
    with engine.connect() as conn:
        recorded = [e for e in opened_events(conn, "type = 'MemoryRecorded'") if e.data.get("content") == content]
    assert [e.metadata.get("correlation_id") for e in recorded] == [correlation_id]


def test_without_one_each_request_gets_its_own(http):
    ids = {http.get("/v1/events", params={"limit": 1}).headers["x-correlation-id"] for _ in range(3)}
    assert len(ids) == 3 and all(uuid.UUID(i) for i in ids)


def test_refusals_before_any_route_answer_it_too(http, app):
    r = http.get("/v1/events", params={"limit": 1}, headers={"host": "evil.example", "X-Correlation-ID": "r-1"})
    assert r.status_code == 403 and r.json()["error"] == "loopback_only"
    assert r.headers["x-correlation-id"] == "r-1"
    r = http.get("/v1/events", params={"limit": "1\x00"}, headers={"X-Correlation-ID": "r-2"})
    assert r.status_code == 422 and r.json()["error"] == "invalid_request"
    assert r.headers["x-correlation-id"] == "r-2"
    with TestClient(app, base_url="http://127.0.0.1", client=("203.0.113.7", 40000)) as remote:
        r = remote.get("/v1/events", params={"limit": 1})
    assert r.status_code == 403 and r.headers["x-correlation-id"]
