"""The generic append paths (POST /v1/events, the ingest queue) take what producers may append there:
MemoryRecorded. Every other producer type (a document's, a source file's, a session's, a transcript's put) is a
422 naming the route that appends it, with nothing written: a forged TranscriptChunksPut whose chunks its log
lacks used to be accepted and then turned GET /v1/transcripts/{id} into a 500."""

from __future__ import annotations

import hashlib
import uuid

import pytest
from sqlalchemy import text

from domain.errors import InvalidPayload


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _forged() -> dict[str, dict]:
    code = "def hello():\n    return 1\n"
    doc = "# Title\n\nbody\n"
    return {
        "CodeFilePut": {"repo": "demo", "path": "hello.py", "content": code, "language": "python",
                        "content_hash": _sha(code)},
        "CodeFileRemoved": {"repo": "demo", "path": "hello.py"},
        "DocumentPut": {"path": "notes/a.md", "content": doc, "content_hash": _sha(doc)},
        "DocumentRetired": {"path": "notes/a.md"},
        "SessionMessagesAppended": {"session_id": "s-1", "messages": [{"message_id": "m1", "role": "user",
                                                                        "content": "hi"}]},
        "SessionMessageSent": {"session_id": "s-1", "message_id": "m1"},
        # A put naming a chunk its log never carried: what made the transcript read a 500.
        "TranscriptChunksPut": {"transcript_id": "forged", "format": "text", "content_hash": _sha("x"),
                                "chunk_hashes": [_sha("never carried")], "chunks": [], "turns": 1},
    }


def _count(engine, tenant: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t"), {"t": tenant}).scalar_one()


ROUTES = {"CodeFilePut": "/v1/code/", "CodeFileRemoved": "/v1/code/", "DocumentPut": "PUT /v1/knowledge/",
          "DocumentRetired": "DELETE /v1/knowledge/", "SessionMessagesAppended": "/v1/sessions/",
          "SessionMessageSent": "/sent", "TranscriptChunksPut": "PUT /v1/transcripts/"}


@pytest.mark.parametrize("type_name", sorted(ROUTES))
def test_a_producer_type_with_its_own_route_is_refused_naming_it(client, engine, tenant, type_name):
    before = _count(engine, tenant)
    data = _forged()[type_name]
    for batch in ([{"type": type_name, "data": data}],
                  [{"type": "MemoryRecorded", "data": {"memory_id": str(uuid.uuid4()), "content": "fine"}},
                   {"type": type_name, "data": data}]):
        r = client.post("/v1/events", json={"events": batch})
        assert r.status_code == 422, r.text
        assert type_name in r.json()["detail"] and ROUTES[type_name] in r.json()["detail"], r.text
        assert "MemoryRecorded only" in r.json()["detail"], r.text
    assert _count(engine, tenant) == before  # the valid batch-mate is not written either

    from workers.producer import enqueue_events

    with pytest.raises(InvalidPayload, match=type_name):
        enqueue_events(tenant, [{"type": type_name, "data": data}])


def test_a_forged_transcript_put_leaves_the_transcript_unknown_not_a_500(client, engine, tenant):
    r = client.post("/v1/events", json={"events": [{"type": "TranscriptChunksPut",
                                                    "data": _forged()["TranscriptChunksPut"]}]})
    assert r.status_code == 422, r.text
    for route in ("/v1/transcripts/forged", "/v1/transcripts/forged/lines"):
        got = client.get(route)
        assert got.status_code == 404, (route, got.status_code, got.text)


def test_memories_are_still_appended_on_their_own_stream(client):
    memory_id = str(uuid.uuid4())
    r = client.post("/v1/events", json={"events": [{"type": "MemoryRecorded",
                                                    "data": {"memory_id": memory_id, "content": "kept"}}]})
    assert r.status_code == 201, r.text
    page = client.get("/v1/events", params={"type": "MemoryRecorded"}).json()
    assert [e["stream_id"] for e in page["events"]] == [f"memory-{memory_id}"]


@pytest.mark.parametrize("type_name", ["RecallServed", "MemoryAdmitted", "DeepRecallServed"])
def test_a_system_type_is_refused_by_its_type_whatever_its_data(client, engine, tenant, type_name):
    """Refused before its payload is read: the reason says the system appends it, never which field is missing
    (which would invite filling them in)."""
    before = _count(engine, tenant)
    for data in ({}, {"recall_id": str(uuid.uuid4())}):
        r = client.post("/v1/events", json={"events": [{"type": type_name, "stream_id": "x-1", "data": data}]})
        assert r.status_code == 422, r.text
        assert "appended by the system, not by producers" in r.text and "Field required" not in r.text, r.text
    assert _count(engine, tenant) == before
