"""Write-time refusals that keep a bad event out of the log (where it would stop the projectors): a memory recorded
twice, strings over their documented limits, an occurred_at outside 1900..2200 UTC or with an unreal offset, and
system-only event types from producers. Each is a clear 4xx and writes nothing."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text
from test_api_bad_input import memory_event, refused

from domain.errors import InvalidPayload
from domain.events import (
    MAX_IDEMPOTENCY_KEY_CHARS,
    MAX_KIND_CHARS,
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    MAX_METADATA_KEY_CHARS,
    MAX_SCOPE_CHARS,
    MAX_STREAM_ID_CHARS,
    MAX_TAG_CHARS,
)


def tenant_events(engine, tenant: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t"), {"t": tenant}).scalar_one()


def test_a_memory_is_recorded_only_at_stream_version_0(client, engine, tenant):
    first = memory_event("Alice moved to Lisbon")
    assert client.post("/v1/events", json={"events": [first]}).status_code == 201
    before = tenant_events(engine, tenant)
    again = {**first, "data": {**first["data"], "content": "Alice moved to Porto"}}
    # A second recording of the same memory: stated at version >= 1, on the existing stream, or twice in a batch.
    refused(client.post("/v1/events", json={"events": [{**again, "expected_version": 1}]}), 422, "version 0")
    refused(client.post("/v1/events", json={"events": [again]}), 409, "recorded once")
    twin = memory_event("twin")
    refused(client.post("/v1/events", json={"events": [twin, {**twin, "data": {**twin["data"], "content": "b"}}]}),
            422, "twice")
    fresh = memory_event("fresh")
    refused(client.post("/v1/events", json={"events": [{**fresh, "expected_version": 3}]}), 422, "version 0")
    assert tenant_events(engine, tenant) == before


@pytest.mark.parametrize("field, value, needle", [
    ("agent_id", "a" * (MAX_SCOPE_CHARS + 1), "agent_id"),
    ("project", "p" * 5000, "project"),
    ("session_id", "s" * (MAX_SCOPE_CHARS + 1), "session_id"),
    ("kind", "k" * (MAX_KIND_CHARS + 1), "kind"),
    ("tags", ["t" * (MAX_TAG_CHARS + 1)], "tags"),
    ("metadata", {"k" * (MAX_METADATA_KEY_CHARS + 1): 1}, "key"),
    ("metadata", {"blob": "x" * MAX_METADATA_BYTES}, "bytes"),
    ("metadata", {"a": [[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}, str(MAX_METADATA_DEPTH)),
])
def test_oversize_strings_are_refused_at_every_entrance(client, engine, tenant, field, value, needle):
    before = tenant_events(engine, tenant)
    refused(client.post("/v1/memories", json={"content": "ok", field: value}), 422, needle)
    refused(client.post("/v1/memories/batch", json={"memories": [{"content": "ok", field: value}]}), 422, needle)
    refused(client.post("/v1/events", json={"events": [memory_event("ok", **{field: value})]}), 422, needle)
    assert tenant_events(engine, tenant) == before


def test_oversize_keys_are_refused(client, engine, tenant):
    before = tenant_events(engine, tenant)
    long_key = "i" * (MAX_IDEMPOTENCY_KEY_CHARS + 1)
    refused(client.post("/v1/memories", json={"content": "ok", "idempotency_key": long_key}), 422)
    refused(client.post("/v1/events", json={"events": [memory_event()], "idempotency_key": long_key}), 422)
    refused(client.post("/v1/events", json={"events": [{**memory_event(), "idempotency_key": long_key}]}), 422)
    stream = "s" * (MAX_STREAM_ID_CHARS + 1)
    refused(client.post("/v1/events", json={"events": [{**memory_event(), "stream_id": stream}]}), 422)
    assert tenant_events(engine, tenant) == before


@pytest.mark.parametrize("occurred_at", [
    "9999-12-31T23:00:00-05:00",  # year 10000 in UTC
    "0001-01-01T00:30:00+01:00",  # year 0 in UTC
    "2243-04-21T15:50:33+17:26",  # found by fuzzing: out of range, and an offset no place has
    "2020-04-21T15:50:33+17:26",
    "1899-12-31T23:59:59Z",
    "2201-01-01T00:00:00Z",
])
def test_occurred_at_outside_the_sane_range_is_422(client, engine, tenant, occurred_at):
    before = tenant_events(engine, tenant)
    refused(client.post("/v1/memories", json={"content": "ok", "occurred_at": occurred_at}), 422, "occurred_at")
    refused(client.post("/v1/events", json={"events": [{**memory_event(), "occurred_at": occurred_at}]}), 422,
            "occurred_at")
    assert tenant_events(engine, tenant) == before


def test_occurred_at_is_stored_in_utc_and_reads_back(client):
    r = client.post("/v1/memories", json={"content": "the kiln reached 1200 degrees", "occurred_at":
                                          "2200-12-31T23:00:00-00:30"})
    assert r.status_code == 201, r.text
    events = client.get("/v1/events", params={"type": "MemoryRecorded"}).json()["events"]
    assert [e["occurred_at"] for e in events] == ["2200-12-31T23:30:00Z"]


def test_producers_cannot_append_the_hit_log(client, engine, tenant):
    before = tenant_events(engine, tenant)
    forged = {"type": "RecallServed", "stream_id": f"recall-{uuid.uuid4()}",
              "data": {"recall_id": str(uuid.uuid4()), "query": "q", "k": 1, "latency_ms": 1.0,
                       "results": [{"memory_id": str(uuid.uuid4()), "rank": 1, "score": 9.9}]}}
    refused(client.post("/v1/events", json={"events": [forged]}), 422, "RecallServed", "system")
    assert tenant_events(engine, tenant) == before

    from workers.producer import enqueue_events

    with pytest.raises(InvalidPayload, match="RecallServed"):
        enqueue_events(tenant, [forged])
    with pytest.raises(InvalidPayload, match="system actor"):
        enqueue_events(tenant, [memory_event()], actor="system:governor")


def test_get_events_reads_a_stored_row_python_cannot_hold(client, engine, tenant):
    # A row written before occurred_at was bounded: year 10000 in UTC. The page still answers.
    with engine.begin() as conn:
        conn.execute(text("""
            INSERT INTO events (event_id, tenant, stream_id, stream_version, type, schema_version, data, metadata,
                                occurred_at)
            VALUES (gen_random_uuid(), :t, 'legacy-1', 1, 'ConsolidationCompleted', 1, '{}', '{}',
                    '10000-01-01 00:00:00+00'), (gen_random_uuid(), :t, 'legacy-2', 1, 'ConsolidationCompleted', 1,
                    '{}', '{}', '0001-01-01 00:00:00+00 BC')"""), {"t": tenant})
    r = client.get("/v1/events")
    assert r.status_code == 200, r.text
    assert [e["occurred_at"][:4] for e in r.json()["events"]] == ["9999", "0001"]
