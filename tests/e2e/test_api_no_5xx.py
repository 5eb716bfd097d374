"""Inputs that answered 500 (or waited, then 503) and must be a clear 4xx at once: metadata nested too deep, lone
surrogates in any string, NUL in GET query parameters, positions beyond bigint or beyond the log's head, bodies
over the limit while they stream in; and a database that cannot give a connection is a JSON 503."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import create_engine
from test_api_bad_input import count_events, memory_event, refused

from infra.db import normalise_url
from infra.settings import get_settings

SURROGATE = "\ud800"


@pytest.fixture
def nothing_written(engine, tenant):
    before = count_events(engine, tenant)
    return lambda: count_events(engine, tenant) == before or pytest.fail("a refused request wrote events")


def raw(client, path: str, body: object):
    # ensure_ascii JSON carries a lone surrogate as the escape "\ud800", as any client may send it.
    return client.post(path, content=json.dumps(body).encode(), headers={"content-type": "application/json"})


def test_metadata_nested_deeper_than_the_limit_is_422(client, nothing_written):
    deep: object = 1
    for _ in range(600):  # deeper than the JSON serialiser's recursion would allow for the log
        deep = {"d": deep}
    for path, body in (("/v1/memories", {"content": "x", "metadata": deep}),
                       ("/v1/memories/batch", {"memories": [{"content": "x", "metadata": deep}]}),
                       ("/v1/events", {"events": [memory_event("x", metadata=deep)]})):
        r = raw(client, path, body)
        assert r.status_code in (400, 422), (path, r.status_code, r.text[:300])
        assert set(r.json()) == {"error", "detail"}
    nothing_written()


@pytest.mark.parametrize("where", ["content", "kind", "agent_id", "project", "session_id", "tags", "metadata",
                                   "metadata_key"])
def test_lone_surrogates_in_any_written_string_are_422(client, nothing_written, where):
    fields: dict[str, object] = {"content": "ok"}
    if where == "tags":
        fields["tags"] = [f"t{SURROGATE}"]
    elif where == "metadata":
        fields["metadata"] = {"k": f"v{SURROGATE}"}
    elif where == "metadata_key":
        fields["metadata"] = {f"k{SURROGATE}": "v"}
    else:
        fields[where] = f"x{SURROGATE}"
    refused(raw(client, "/v1/memories", fields), 422, "surrogate")
    refused(raw(client, "/v1/memories/batch", {"memories": [fields, {"content": "astral 𝄞"}]}), 422, "surrogate")
    event = memory_event(**{k: v for k, v in fields.items() if k != "content"})
    event["data"]["content"] = fields["content"]
    refused(raw(client, "/v1/events", {"events": [event]}), 422, "surrogate")
    nothing_written()


def test_lone_surrogates_in_recall_are_422(client, nothing_written):
    for body in ({"query": f"where{SURROGATE}"}, {"query": "ok", "agent_id": SURROGATE},
                 {"query": "ok", "kinds": [SURROGATE]}, {"query": "ok", "project": SURROGATE}):
        refused(raw(client, "/v1/recall", body), 422, "surrogate")
    nothing_written()


def test_nul_and_oversize_in_get_query_parameters_are_422(client):
    for params in ({"stream_id": "a\x00b"}, {"type": "Memory\x00Recorded"}, {"stream_id": "s" * 5000}):
        refused(client.get("/v1/events", params=params), 422)
    for name in ("after", "before", "cursor"):
        refused(client.get("/v1/events", params={name: 2**63}), 422, name)
    assert client.get("/v1/events", params={"since": "2020-01-01T00:00:00+23:00"}).status_code == 200  # as UTC
    refused(client.get("/v1/events", params={"since": "0001-01-01T00:00:00+01:00"}), 422, "since")


def test_min_position_beyond_bigint_or_the_head_is_an_immediate_4xx(client, nothing_written):
    refused(client.post("/v1/recall", json={"query": "ok", "min_position": 2**63}), 422, "min_position")
    # Beyond the log's head: refused now (the test settings would otherwise wait 30 s, then 503).
    r = client.post("/v1/recall", json={"query": "ok", "min_position": 2**62})
    refused(r, 422, "head")
    nothing_written()


def test_a_body_over_the_limit_is_413_while_it_streams_in(client, monkeypatch):
    import api.app

    limit = api.app.MAX_BODY_BYTES
    # A declared length over the limit is refused before the body is read.
    r = client.post("/v1/memories", content=b"{}", headers={"content-type": "application/json",
                                                            "content-length": str(limit + 1)})
    assert r.status_code == 413, r.text

    def chunks():  # no Content-Length: chunked transfer, counted as it arrives
        yield b'{"content": "'
        piece = b"x" * (1024 * 1024)
        for _ in range(limit // len(piece) + 2):
            yield piece
        yield b'"}'

    r = client.post("/v1/memories", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413, r.text[:300]
    assert r.json()["error"] == "payload_too_large"


def test_an_exhausted_pool_is_a_json_503(app, client):
    from api.context import engine as engine_dependency

    # A real pool of one connection, held here: the request waits 0.2 s for it and gets a JSON 503.
    tiny = create_engine(normalise_url(get_settings().stack.database_url), pool_size=1, max_overflow=0,
                         pool_timeout=0.2)
    held = tiny.connect()
    app.dependency_overrides[engine_dependency] = lambda: tiny
    try:
        r = client.get("/v1/memories/00000000-0000-0000-0000-000000000000")
        assert r.status_code == 503, r.text
        assert r.json()["error"] == "service_unavailable"
        r = client.post("/v1/memories", json={"content": "Alice moved to Lisbon"})
        assert r.status_code == 503, r.text
    finally:
        app.dependency_overrides.pop(engine_dependency, None)
        held.close()
        tiny.dispose()


ODD_PARAMETERS = ("%00", "a%00b", "%ED%A0%80", "%FF", "x%C0%80")  # NUL, a lone surrogate, stray bytes


def _routes(app):
    """(method, path, path parameters, query parameters) of every operation, from the app's own schema."""
    for path, operations in app.openapi()["paths"].items():
        for method, operation in operations.items():
            params = operation.get("parameters", [])
            yield (method.upper(), path, [p["name"] for p in params if p["in"] == "path"],
                   [p["name"] for p in params if p["in"] == "query"])


def test_nul_or_invalid_unicode_in_any_path_or_query_parameter_is_422(app, client, nothing_written):
    """One check for every route (api/parameters.py): 8 routes answered 500 (GET /v1/knowledge?after=%00,
    GET /v1/sessions/a%00b/messages, ...), a route added later is covered too."""
    checked = 0
    for method, path, path_params, query_params in _routes(app):
        plain = path
        for name in path_params:
            plain = plain.replace(f"{{{name}}}", "00000000-0000-0000-0000-000000000000")
        cases = [path.replace(f"{{{name}}}", odd) for name in path_params for odd in ODD_PARAMETERS]
        cases += [f"{plain}?{name}={odd}" for name in query_params for odd in ODD_PARAMETERS]
        cases += [f"{plain}?{ODD_PARAMETERS[0]}=1"]
        for url in cases:
            r = client.request(method, url, json={} if method in ("POST", "PUT", "PATCH") else None)
            refused(r, 422, "query" if "?" in url else "path")
            checked += 1
    assert checked > 200, checked
    nothing_written()


def test_a_supersede_with_a_nul_idempotency_key_is_422(client, nothing_written):
    """Found by schemathesis: the retry look-up sent the key to PostgreSQL before the append refused it (500
    "a database statement failed")."""
    memory = client.post("/v1/memories", json={"content": "Alice keeps bees in Porto", "must_keep": True})
    assert memory.status_code == 201, memory.text
    written = count_events_of(client)
    r = client.post(f"/v1/memories/{memory.json()['memory_id']}/supersede",
                    json={"content": "Alice keeps bees in Braga", "reason": "moved", "idempotency_key": "k\x00"})
    refused(r, 422, "NUL")
    assert count_events_of(client) == written


def count_events_of(client) -> int:
    return len(client.get("/v1/events", params={"limit": 1000}).json()["events"])


def test_a_deep_recall_with_a_nul_in_its_question_or_scope_is_422(client, nothing_written):
    """Found by make fuzz: the question went into the audit event's JSON, which PostgreSQL refused (500)."""
    for body in ({"question": "where\x00is it"}, {"question": "ok", "agent_id": "a\x00"},
                 {"question": "ok", "project": "\x00"}, {"question": "ok", "session_id": "s\x00"}):
        refused(client.post("/v1/deep_recall", json=body), 422, "NUL")
    nothing_written()
