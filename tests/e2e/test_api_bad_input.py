"""Bad input over HTTP: every refusal is a clear 4xx and writes nothing; awkward but valid text round-trips.

Each test has a tenant of its own (an API key mapped to the `tenant` fixture), so "nothing written" is an
exact count of that tenant's events before and after.
"""

from __future__ import annotations

import uuid

import pytest
from conftest import wait_until
from sqlalchemy import text


def count_events(engine, tenant: str) -> int:
    """The tenant's own events; the governor's decisions, appended in the same transaction as each memory
    written, are not counted."""
    with engine.connect() as conn:
        return conn.execute(text(
            "SELECT count(*) FROM events WHERE tenant = :t AND type NOT IN "
            "('MemoryAdmitted', 'MemoryReinforced', 'MemorySuperseded', 'MemoryStatusChanged')"), {"t": tenant}
        ).scalar_one()


@pytest.fixture
def nothing_written(engine, tenant):
    """Call it after the refused requests: asserts the tenant's log is exactly as it was."""
    before = count_events(engine, tenant)

    def check() -> None:
        assert count_events(engine, tenant) == before, "a refused request wrote events"

    return check


def memory_event(content: str = "ok", **data: object) -> dict:
    return {"type": "MemoryRecorded", "data": {"memory_id": str(uuid.uuid4()), "content": content, **data}}


def refused(response, status: int, *needles: str) -> dict:
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert set(body) == {"error", "detail"}, body
    flat = str(body["detail"])
    for needle in needles:
        assert needle in flat, (needle, body)
    return body


def test_malformed_json_is_400(client, nothing_written):
    for path in ("/v1/memories", "/v1/memories/batch", "/v1/events", "/v1/recall"):
        for raw in (b'{"content": "unterminated', b"not json at all", b'{"content": "x",}'):
            r = client.post(path, content=raw, headers={"content-type": "application/json"})
            body = refused(r, 400, "not valid JSON")
            assert body["error"] == "malformed_json"
    nothing_written()


def test_unknown_event_type_is_422_naming_it(client, nothing_written):
    r = client.post("/v1/events", json={"events": [{"type": "MemoryTeleported", "stream_id": "s-1", "data": {}}]})
    refused(r, 422, "MemoryTeleported", "MemoryRecorded")  # names the bad type and the known ones
    # One unknown type in a batch refuses the whole batch, valid events included.
    r = client.post("/v1/events", json={"events": [memory_event("valid"), {"type": "Nope", "stream_id": "s",
                                                                           "data": {}}]})
    refused(r, 422, "Nope")
    nothing_written()


@pytest.mark.parametrize("event, needle", [
    ({"type": "MemoryRecorded", "data": {"content": "no memory id"}}, "memory_id"),
    ({"type": "MemoryRecorded", "data": {"memory_id": "not-a-uuid", "content": "x"}}, "memory_id"),
    ({"type": "MemoryRecorded", "data": {"memory_id": str(uuid.uuid4()), "content": ""}}, "content"),
    ({"type": "MemoryRecorded", "data": {"memory_id": str(uuid.uuid4()), "content": "x", "colour": "red"}},
     "colour"),
    ({"type": "MemoryRecorded", "data": {"memory_id": str(uuid.uuid4()), "content": "x", "tags": "not-a-list"}},
     "tags"),
    ({"type": "MemoryRecorded", "schema_version": 9, "data": {"memory_id": str(uuid.uuid4()), "content": "x"}},
     "version 9"),
    ({"type": "MemoryRecorded", "data": ["not", "an", "object"]}, "data"),
    ({"type": "RecallServed", "stream_id": "recall-x", "data": {"query": "q"}}, "appended by the system"),  # by type
    ({"type": "MemoryRecorded", "stream_id": "memory-elsewhere",
      "data": {"memory_id": str(uuid.uuid4()), "content": "x"}}, "stream"),
])
def test_invalid_payload_is_422(client, nothing_written, event, needle):
    refused(client.post("/v1/events", json={"events": [event]}), 422, needle)
    # ... and takes its valid batch-mates down with it.
    refused(client.post("/v1/events", json={"events": [memory_event("valid"), event]}), 422, needle)
    nothing_written()


def test_invalid_request_bodies_are_422(client, nothing_written):
    cases = [
        ("/v1/memories", {}),
        ("/v1/memories", {"content": ""}),
        ("/v1/memories", {"content": 42}),
        ("/v1/memories", {"content": "x", "unexpected_field": 1}),
        ("/v1/memories", {"content": "x", "metadata": "not an object"}),
        ("/v1/memories", {"content": "x", "occurred_at": "yesterday-ish"}),
        ("/v1/memories", {"content": "x", "tags": ["t"] * 65}),
        ("/v1/memories/batch", {"memories": []}),
        ("/v1/memories/batch", {"memories": [{"content": "fine"}, {"content": ""}]}),
        ("/v1/events", {"events": []}),
        ("/v1/events", {"events": [memory_event()], "idempotency_key": ""}),
    ]
    for path, body in cases:
        r = client.post(path, json=body)
        assert r.status_code == 422, (path, body, r.status_code, r.text)
        assert r.json()["error"] in ("invalid_request", "InvalidPayload"), r.text
    nothing_written()


def test_oversized_content_is_413_at_the_documented_limit(client, engine, tenant, nothing_written):
    from infra.settings import get_settings

    limit = get_settings().limits.max_content_chars
    assert limit == 32768  # the documented default
    too_big = "word " * (limit // 5) + "x" * (limit % 5 + 1)
    assert len(too_big) == limit + 1
    refused(client.post("/v1/memories", json={"content": too_big}), 413, str(limit), str(limit + 1))
    refused(client.post("/v1/memories/batch", json={"memories": [{"content": "small"}, {"content": too_big}]}),
            413, str(limit))
    refused(client.post("/v1/events", json={"events": [memory_event("small"), memory_event(too_big)]}), 413)
    # The limit counts characters, not bytes: 32,769 three-byte characters are refused too.
    refused(client.post("/v1/memories", json={"content": "記" * (limit + 1)}), 413, str(limit))
    nothing_written()
    # Exactly at the limit is accepted (the only write of this test).
    at_limit = too_big[:-1]
    assert len(at_limit) == limit
    ok = client.post("/v1/memories", json={"content": at_limit})
    assert ok.status_code == 201, ok.text
    assert count_events(engine, tenant) == 1


def test_empty_or_bad_query_is_422(client, nothing_written):
    for body, needle in [({"query": ""}, "empty"), ({"query": "   \n\t "}, "empty"), ({}, "query"),
                         ({"query": "ok", "k": 0}, "k"), ({"query": "ok", "k": 101}, "k"),
                         ({"query": "x" * 5000}, "4096"), ({"query": "ok", "min_position": -1}, "min_position")]:
        refused(client.post("/v1/recall", json=body), 422, needle)
    nothing_written()  # not even a RecallServed event


def test_batch_over_the_limit_is_422(client, nothing_written):
    memories = [{"content": f"memory {i}"} for i in range(1001)]
    refused(client.post("/v1/memories/batch", json={"memories": memories}), 422, "1000", "1001")
    events = [memory_event(f"event {i}") for i in range(1001)]
    refused(client.post("/v1/events", json={"events": events}), 422, "1000", "1001")
    nothing_written()


def test_nul_characters_are_refused_cleanly(client, nothing_written):
    """JSON allows \\u0000 but PostgreSQL text and jsonb cannot hold it: a clear 422, not a server error."""
    for path, body in [("/v1/memories", {"content": "before\u0000after"}),
                       ("/v1/memories", {"content": "fine", "metadata": {"k": "a\u0000b"}}),
                       ("/v1/memories", {"content": "fine", "agent_id": "a\u0000"}),
                       ("/v1/memories", {"content": "fine", "metadata": {"k\u0000": "v"}}),
                       ("/v1/memories", {"content": "fine", "idempotency_key": "key\u0000"}),
                       ("/v1/events", {"events": [memory_event("nul \u0000 inside")]}),
                       ("/v1/events", {"events": [memory_event()], "idempotency_key": "batch\u0000"}),
                       ("/v1/recall", {"query": "nul \u0000 query"}),
                       ("/v1/recall", {"query": "fine", "agent_id": "a\u0000"})]:
        refused(client.post(path, json=body), 422, "NUL")
    nothing_written()


def test_refused_without_auth_when_keys_are_set(client, nothing_written):
    r = client.post("/v1/memories", json={"content": "x"}, headers={"Authorization": ""})
    assert r.status_code == 401
    nothing_written()


UNUSUAL = {
    "cjk_zh": "我喜欢在北京吃烤鸭，尤其是冬天的时候",
    "cjk_ja": "東京タワーは夜になると赤く光ります",
    "emoji": "Bob brought 🍕 pizza and 🎉 confetti to the rooftop party 🥳",
    "sql": "'; DROP TABLE events; -- and also \" OR 1=1; /* comment */ \\x00 $$ E'\\\\' %s {}",
    "rtl_mixed": "Meeting with Ødegård in Zürich — naïve café façade שלום مرحبا",
}


def test_unusual_text_is_accepted_and_recalled(client, engine, tenant, worker):
    weird_agent = "agent'; DROP TABLE memories; --"
    metadata = {"quote": "it's \"fine\"", "emoji": "🧠", "sql": "1; DELETE FROM events", "cjk": "記憶"}
    batch = client.post("/v1/memories/batch", json={"memories": [
        {"content": content, "agent_id": weird_agent, "metadata": {**metadata, "name": name}, "tags": [name, "🏷️"],
         "must_keep": True}  # the English embedding model puts CJK texts close: the gate would merge them
        for name, content in UNUSUAL.items()] + [
        {"content": "Filler about gardening tomatoes in spring", "agent_id": weird_agent, "must_keep": True},
        {"content": "Filler about the train timetable to Porto", "agent_id": weird_agent, "must_keep": True}]})
    assert batch.status_code == 201, batch.text
    ids = dict(zip([*UNUSUAL, "f1", "f2"], (m["memory_id"] for m in batch.json()["memories"]), strict=True))
    last = batch.json()["memories"][-1]["position"]

    # The worker may still be loading its model: wait for it, then recall with read-your-writes.
    from projections.registry import PROJECTORS
    from projections.runner import has_reached

    def projected() -> bool:
        with engine.connect() as conn:
            return all(has_reached(conn, p, last) for p in PROJECTORS.values())

    assert wait_until(projected, timeout=120)

    queries = {"cjk_zh": "北京烤鸭", "cjk_ja": "東京タワー", "emoji": "🍕 pizza party",
               "sql": "DROP TABLE events", "rtl_mixed": "Ødegård Zürich café"}
    for name, query in queries.items():
        r = client.post("/v1/recall", json={"query": query, "agent_id": weird_agent, "k": 3, "min_position": last})
        assert r.status_code == 200, (name, r.text)
        results = r.json()["results"]
        assert results and results[0]["memory_id"] == ids[name], (name, query, results)
        assert results[0]["content"] == UNUSUAL[name]
        assert results[0]["metadata"] == {**metadata, "name": name}
        if name != "emoji":  # emoji are not words; the others must match on the keyword leg too
            assert "keyword" in results[0]["explanation"]["legs"], (name, results[0]["explanation"])

    # Stored verbatim, read back verbatim.
    for name, content in UNUSUAL.items():
        got = client.get(f"/v1/memories/{ids[name]}").json()
        assert (got["content"], got["agent_id"], got["tags"]) == (content, weird_agent, [name, "🏷️"])
    # The hit-log kept the SQL-looking query as data, and the tables are all still there.
    served = client.get("/v1/events", params={"type": "RecallServed"}).json()["events"]
    assert "DROP TABLE events" in {e["data"]["query"] for e in served}
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM memories WHERE tenant = :t"), {"t": tenant}).scalar_one() == 7
    assert count_events(engine, tenant) == 7 + len(queries)
