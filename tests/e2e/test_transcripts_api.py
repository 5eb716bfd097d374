"""The transcript routes through the app: PUT with delta-sync reported, GET byte-exact, the lines slice, the drill,
the transcripts bucket of POST /v1/recall/multi, the privacy gate (exclude_sessions names a transcript id) on every
route and the export, tenant isolation, and bad input refused with nothing written."""

from __future__ import annotations

import json
import uuid

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from projections.runner import catch_up
from projections.transcripts import TranscriptsProjector


def turns(n: int, start: int = 0) -> str:
    return "".join(f"[2026-02-01T09:{i // 60 % 60:02d}:{i % 60:02d}Z] {'USER' if i % 2 == 0 else 'ASSISTANT'}: "
                   f"step {i} of the kayak{i} plan\n" for i in range(start, start + n))


def _events(engine, tenant: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t AND type = 'TranscriptChunksPut'"),
                            {"t": tenant}).scalar_one()


def test_put_get_lines_and_delta_sync_over_http(client, engine, tenant) -> None:
    r = client.put("/v1/transcripts/s-100", content=turns(100).encode())
    assert r.status_code == 200, r.text
    assert r.json() | {"position": None} == {
        "transcript_id": "s-100", "version": 1, "content_hash": r.json()["content_hash"], "format": "text",
        "changed": True, "chunks": 13, "chunks_written": 13, "chunks_reused": 0, "lines": 100, "turns": 100,
        "bytes": len(turns(100).encode()), "position": None}
    same = client.put("/v1/transcripts/s-100", content=turns(100).encode()).json()
    assert not same["changed"] and same["chunks_written"] == 0 and same["version"] == 1
    grown = client.put("/v1/transcripts/s-100", content=turns(110).encode()).json()
    assert grown["changed"] and (grown["chunks_written"], grown["chunks_reused"], grown["version"]) == (2, 12, 2)
    assert _events(engine, tenant) == 2

    got = client.get("/v1/transcripts/s-100")
    assert got.status_code == 200 and got.content == turns(110).encode()
    assert got.headers["x-transcript-version"] == "2" and got.headers["x-content-hash"] == grown["content_hash"]
    s = client.get("/v1/transcripts/s-100/lines", params={"from": 5, "to": 7}).json()
    assert s["text"] == turns(3, start=4) and (s["first"], s["last"], s["lines_total"]) == (5, 7, 110)
    assert client.get("/v1/transcripts/s-100/lines", params={"from": 110}).json()["text"] == turns(1, start=109)
    assert client.get("/v1/transcripts/s-100/lines", params={"from": 111}).status_code == 422
    assert client.get("/v1/transcripts/s-100/lines", params={"from": 0}).status_code == 422
    assert client.get("/v1/transcripts/nope").status_code == 404

    # JSONL, byte-exact too (a CRLF line, a unicode escape, no final newline).
    jl = '{"role": "user", "content": "caf\\u00e9 order"}\r\n{"role": "assistant", "content": "noted"}'
    assert client.put("/v1/transcripts/s-jsonl", content=jl.encode()).json()["format"] == "jsonl"
    assert client.get("/v1/transcripts/s-jsonl").content == jl.encode()

    catch_up(engine, TranscriptsProjector(), 500, max_seconds=120)
    listed = client.get("/v1/transcripts").json()["transcripts"]
    assert [(t["transcript_id"], t["version"], t["turns"]) for t in listed] == [("s-100", 2, 110), ("s-jsonl", 1, 2)]

    # The transcripts bucket of recall/multi, and the drill by its handle.
    body = client.post("/v1/recall/multi", json={"query": "kayak105 plan", "domains": ["transcripts"],
                                                  "k": 2}).json()
    [bucket] = body["buckets"]
    assert bucket["domain"] == "transcripts" and bucket["results"], body
    top = bucket["results"][0]
    assert "step 105 of the kayak105 plan" in top["content"] and top["handle"]["transcript_id"] == "s-100"
    h = top["handle"]
    d = client.get(f"/v1/transcripts/s-100/chunks/{h['ord']}",
                   params={"content_hash": h["content_hash"], "recall_id": body["recall_id"]})
    assert d.status_code == 200, d.text
    assert d.json()["chunk"]["text"] == top["content"]
    first, last = h["lines"]
    assert client.get("/v1/transcripts/s-100/lines", params={"from": first, "to": last}).json()["text"] == \
        top["content"]


@pytest.mark.parametrize(("body", "params", "status", "reason"), [
    (b"\x00" + turns(2).encode(), {}, 422, "NUL"),
    (b"[t] USER: caf\xe9\n", {}, 422, "UTF-8"),
    (b"just some prose\n", {}, 422, "line 1"),
    (b'{"role": "user", "content": "a"}\n{oops\n', {}, 422, "line 2"),
    (b"", {}, 422, "no turn"),
    (turns(2).encode(), {"format": "xml"}, 422, "format"),
    (b"x" * (16 * 1024 * 1024 + 1), {}, 413, "limit"),
])
def test_bad_input_is_refused_and_nothing_is_written(client, engine, tenant, body, params, status,
                                                     reason) -> None:
    r = client.put("/v1/transcripts/s-bad", content=body, params=params)
    assert r.status_code == status and reason in r.json()["detail"], r.text
    assert _events(engine, tenant) == 0
    assert client.put("/v1/transcripts/bad%2Fid", content=turns(1).encode()).status_code in (404, 422)
    assert client.put("/v1/transcripts/-x", content=turns(1).encode()).status_code == 422
    assert _events(engine, tenant) == 0


@pytest.fixture
def ops(app, tenant, monkeypatch):
    import api.context
    from infra.settings import get_settings, replace

    key, other = f"tops-{uuid.uuid4().hex}", f"tother-{uuid.uuid4().hex}"
    settings = replace(get_settings(), api_keys={key: tenant, other: f"{tenant}-other"}, operator_keys=(key,))
    monkeypatch.setattr(api.context, "get_settings", lambda: settings)
    with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as c, \
            TestClient(app, headers={"Authorization": f"Bearer {other}"}) as o:
        yield c, o


def test_privacy_gate_and_tenant_isolation(ops, engine) -> None:
    c, other = ops
    assert c.put("/v1/transcripts/secret-1", content=turns(20).encode()).status_code == 200
    assert c.put("/v1/transcripts/public-1", content=turns(20, start=100).encode()).status_code == 200
    catch_up(engine, TranscriptsProjector(), 500, max_seconds=120)
    # Another tenant sees none of it.
    assert other.get("/v1/transcripts/secret-1").status_code == 404
    assert other.get("/v1/transcripts").json()["transcripts"] == []
    body = other.post("/v1/recall/multi", json={"query": "kayak5 plan", "domains": ["transcripts"]}).json()
    assert body["buckets"][0]["results"] == []

    before = c.post("/v1/recall/multi", json={"query": "kayak5 plan", "domains": ["transcripts"]}).json()
    assert before["buckets"][0]["results"][0]["handle"]["transcript_id"] == "secret-1"
    assert c.put("/v1/policy/privacy", json={"exclude_sessions": ["secret-1"]}).status_code == 200
    for path in ("/v1/transcripts/secret-1", "/v1/transcripts/secret-1/lines", "/v1/transcripts/secret-1/chunks/0"):
        assert c.get(path).status_code == 404, path
    assert [t["transcript_id"] for t in c.get("/v1/transcripts").json()["transcripts"]] == ["public-1"]
    for query in ("kayak5 plan", "step plan kayak"):
        results = c.post("/v1/recall/multi", json={"query": query, "domains": ["transcripts"]}).json()
        assert all(r["handle"]["transcript_id"] != "secret-1" for r in results["buckets"][0]["results"])
    assert c.get("/v1/transcripts/public-1").status_code == 200
    # The non-operator export leaves the excluded transcript's put and the recall that returned it out (the policy
    # itself names it, and is every reader's to see).
    reader_key = f"tread-{uuid.uuid4().hex}"
    import api.context

    settings = api.context.get_settings()
    from infra.settings import replace

    tenant = settings.api.api_keys[c.headers["Authorization"].split()[1]]
    reader_settings = replace(settings, api_keys={**settings.api.api_keys, reader_key: tenant})
    api.context.get_settings = lambda: reader_settings  # monkeypatched by the fixture: restored after the test
    with TestClient(c.app, headers={"Authorization": f"Bearer {reader_key}"}) as reader:
        exported = reader.get("/v1/events", params={"limit": 1000}).json()["events"]
    leaks = [e["type"] for e in exported if "secret-1" in json.dumps(e) and e["type"] != "PrivacyPolicySet"]
    assert "public-1" in json.dumps(exported) and leaks == [], leaks
