"""Every route that answered a plain dict declares its response schema: the answer, on real data, validates
against its OpenAPI schema (a named component with properties, not an empty one), and is what the route
answered before it had one (the query functions' output, field for field, as pydantic rendered the plain dict)."""

from __future__ import annotations

import uuid
from dataclasses import asdict
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from pydantic import TypeAdapter
from sqlalchemy import Connection, text

from domain.events import memory_stream
from domain.privacy import NO_POLICY
from eventstore.stream import read_stream
from projections import dead_letters as projection_dead_letters
from projections.code import CodeProjector
from projections.registry import PROJECTORS
from projections.runner import catch_up
from projections.sessions import SessionsProjector
from recall.domains.code import list_files, symbol_answer, symbols_named
from recall.domains.sessions import list_sessions, session_messages
from services.sessions import resume_context
from workers import ingest_dead_letters

SOURCE = '''def greet(name):
    """Say hello."""
    return shout(name)


def shout(text):
    return text.upper()
'''


def as_answered(value: Any) -> Any:
    """What a route annotated `-> dict` answered for `value` before it declared a schema (pydantic's JSON)."""
    return TypeAdapter(Any).dump_python(value, mode="json")


def conforms(app, method: str, path: str, status: int, body: Any) -> None:
    """`body` validates against the route's declared schema, which names a component with properties."""
    schema = app.openapi()
    declared = schema["paths"][path][method]["responses"][str(status)]["content"]["application/json"]["schema"]
    assert "$ref" in declared, f"{method.upper()} {path} declares no response schema: {declared}"
    component = schema["components"]["schemas"][declared["$ref"].rsplit("/", 1)[-1]]
    assert component.get("properties"), component
    Draft202012Validator({**declared, "components": schema["components"]}).validate(body)


@pytest.fixture
def operator(app, client, monkeypatch):
    """Beside `client` (a tenant key): a client with an operator key."""
    from fastapi.testclient import TestClient

    import api.context
    from infra.settings import replace

    settings = api.context.get_settings()
    settings = replace(settings, api_keys={**settings.api.api_keys, "ops-key": "ops"}, operator_keys=("ops-key",))
    monkeypatch.setattr(api.context, "get_settings", lambda: settings)
    with TestClient(app, headers={"Authorization": "Bearer ops-key"}) as c:
        yield c


def test_session_routes(app, client, engine, tenant: str) -> None:
    r = client.post("/v1/sessions/s1/messages", json={"agent_id": "ag", "messages": [
        {"message_id": "u1", "role": "user", "content": "roll back payments", "created_at": "2026-01-02T10:00:00Z"},
        {"message_id": "a1", "role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "rollback", "arguments": "{}"}}]},
        {"message_id": "t1", "role": "tool", "tool_call_id": "c1", "content": "rolled back", "checkpoint": True},
        {"message_id": "p1", "role": "assistant", "content": "done", "sent": False}]})
    assert r.status_code == 201, r.text
    conforms(app, "post", "/v1/sessions/{session_id}/messages", 201, r.json())
    for _ in range(2):  # marked, then already sent
        r = client.post("/v1/sessions/s1/messages/p1/sent")
        assert r.status_code == 200, r.text
        conforms(app, "post", "/v1/sessions/{session_id}/messages/{message_id}/sent", 200, r.json())
    catch_up(engine, SessionsProjector(), 1000, max_seconds=120)

    with engine.connect() as conn:
        sessions, next_cursor = list_sessions(conn, tenant, NO_POLICY)
        messages, next_after = session_messages(conn, tenant, "s1", NO_POLICY, 0, 100, True)  # type: ignore[misc]
        log, ctx = resume_context(conn, tenant, "s1", None, NO_POLICY)
    listing = client.get("/v1/sessions").json()
    conforms(app, "get", "/v1/sessions", 200, listing)
    assert listing == as_answered({"sessions": sessions, "next_cursor": next_cursor})
    assert listing["sessions"][0]["first_at"] == "2026-01-02T10:00:00Z"
    page = client.get("/v1/sessions/s1/messages", params={"include_unsent": True}).json()
    conforms(app, "get", "/v1/sessions/{session_id}/messages", 200, page)
    assert page == as_answered({"session_id": "s1", "messages": messages, "next_after_seq": next_after})
    assert page["messages"][1]["tool_calls"][0]["id"] == "c1" and page["messages"][1]["tool_name"] is None
    resume = client.get("/v1/sessions/s1/resume").json()
    conforms(app, "get", "/v1/sessions/{session_id}/resume", 200, resume)
    assert resume == {"session_id": "s1", "budget_tokens": ctx.budget_tokens, "tokens": ctx.tokens,
                      "items": ctx.items, "dropped": ctx.dropped, "last_position": log.last_position,
                      "context": ctx.text}
    as_text = client.get("/v1/sessions/s1/resume", params={"format": "text"})
    assert as_text.headers["content-type"].startswith("text/plain") and as_text.text == ctx.text
    assert "text/plain" in app.openapi()["paths"]["/v1/sessions/{session_id}/resume"]["get"]["responses"]["200"][
        "content"]


def test_code_routes(app, client, engine, tenant: str) -> None:
    files = [{"path": "hello.py", "content": SOURCE}, {"path": "broken.py", "content": "def (:\n"}]
    assert client.post("/v1/code/demo/files", json={"files": files}).status_code == 200
    catch_up(engine, CodeProjector(), 500, max_seconds=120)

    with engine.connect() as conn:
        listed, next_after = list_files(conn, tenant, "demo", NO_POLICY)
        [row] = symbols_named(conn, tenant, "demo", "hello.greet", NO_POLICY)
        symbol = symbol_answer(conn, tenant, row, NO_POLICY)
    r = client.get("/v1/code/demo/files").json()
    conforms(app, "get", "/v1/code/{repo}/files", 200, r)
    assert r == as_answered({"repo": "demo", "files": listed, "next_after": next_after})
    repos = client.get("/v1/code").json()
    conforms(app, "get", "/v1/code", 200, repos)
    assert [(r["repo"], r["files"]) for r in repos["repos"]] == [("demo", 2)]
    one = client.get("/v1/code/demo/symbols/hello.greet").json()
    conforms(app, "get", "/v1/code/{repo}/symbols/{qualified_name}", 200, one)
    assert one == as_answered({**symbol, "also": []})
    assert [c["symbol"] for c in one["callees"]] == ["hello.shout"]

    for callees in (False, True):
        found = client.get("/v1/code/demo/symbols", params={"q": "greet", "callees": callees}).json()
        conforms(app, "get", "/v1/code/{repo}/symbols", 200, found)
        [hit] = [s for s in found["symbols"] if s["symbol"] == "hello.greet"]
        expected = {k for k in symbol if k != "callees" or callees} | {"status", "score", "handle"}
        assert set(hit) == expected  # callees only when asked, as before
        assert hit["handle"] == {"repo": "demo", "file": "hello.py", "qualified_name": "hello.greet",
                                 "content_hash": symbol["content_hash"]}
    nothing = client.get("/v1/code/demo/symbols", params={"q": "zzzqqq"}).json()
    conforms(app, "get", "/v1/code/{repo}/symbols", 200, nothing)
    assert nothing["symbols"] == [] and nothing["reason"]


class NoopProjector:
    types = ("MemoryRecorded",)
    tables: tuple[str, ...] = ()

    def __init__(self, tenant: str) -> None:
        self.name = f"test_schemas_{tenant}"

    def apply(self, conn: Connection, events: Any) -> None:
        pass


@pytest.fixture
def parked(engine, tenant, monkeypatch):
    """A projection dead letter (a test projector's, parked) and a parked ingest message, of this tenant."""
    from services.remember import MemoryInput, remember

    projector = NoopProjector(tenant)
    monkeypatch.setitem(PROJECTORS, projector.name, projector)
    [done] = remember(engine, tenant, [MemoryInput("the parked one", agent_id="a", must_keep=True)],
                      {"actor": "test"})
    with engine.begin() as conn:
        [event] = [e for e in read_stream(conn, tenant, memory_stream(done.memory_id)) if e.position == done.position]
        for _ in range(projection_dead_letters.MAX_EVENT_FAILURES):
            projection_dead_letters.record_failure(conn, projector.name, event, ValueError("cannot apply"))
    ingest_id = ingest_dead_letters.park(engine, tenant, [{"type": "NoSuchEvent", "data": {}}],
                                         {"actor": "test", "nonce": uuid.uuid4().hex}, "unknown event type", "x")
    yield projector, done.position, ingest_id
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM projection_dead_letters WHERE projection = :p"), {"p": projector.name})
        conn.execute(text("DELETE FROM ingest_dead_letters WHERE tenant = :t"), {"t": tenant})


def test_operations_routes(app, engine, tenant: str, operator, parked) -> None:
    projector, position, ingest_id = parked
    r = operator.get("/v1/projections").json()
    conforms(app, "get", "/v1/projections", 200, r)
    mine = next(p for p in r["projections"] if p["name"] == projector.name)
    assert set(mine) == {"name", "position", "head", "lag_events", "lag_seconds", "updated_at", "parked", "failing"}
    assert mine["parked"] == 1 and r["ingest_dead_letters"] >= 1

    with engine.connect() as conn:
        letters = projection_dead_letters.dead_letters(conn, projector.name)
        ingest = [d for d in ingest_dead_letters.dead_letters(conn) if d.id == ingest_id]
    listed = operator.get("/v1/projections/dead-letters", params={"projection": projector.name}).json()
    conforms(app, "get", "/v1/projections/dead-letters", 200, listed)
    assert listed == as_answered({"dead_letters": [asdict(d) for d in letters]})
    skipped = operator.post(f"/v1/projections/{projector.name}/dead-letters/{position}/skip")
    assert skipped.status_code == 200, skipped.text
    conforms(app, "post", "/v1/projections/{name}/dead-letters/{position}/{action}", 200, skipped.json())
    assert skipped.json() == {"projection": projector.name, "position": position, "outcome": "skipped",
                              "error": None}

    listed = operator.get("/v1/ingest/dead-letters").json()
    conforms(app, "get", "/v1/ingest/dead-letters", 200, listed)
    assert [d for d in listed["dead_letters"] if d["id"] == ingest_id] == as_answered(
        [asdict(d) for d in ingest])
    closed = operator.post(f"/v1/ingest/dead-letters/{ingest_id}/skip")
    assert closed.status_code == 200, closed.text
    conforms(app, "post", "/v1/ingest/dead-letters/{dead_letter_id}/{action}", 200, closed.json())
    assert closed.json() == {"id": ingest_id, "outcome": "skipped", "positions": None, "reason": None}

    rebuilt = operator.post("/v1/projections/sessions/rebuild")
    assert rebuilt.status_code == 200, rebuilt.text
    conforms(app, "post", "/v1/projections/{name}/rebuild", 200, rebuilt.json())
    assert set(rebuilt.json()) == {"projection", "rebuilt_to_position"}
