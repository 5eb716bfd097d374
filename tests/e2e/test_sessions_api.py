"""Session messages over HTTP: append (one, a batch, an agent's OpenAI list as is), mark sent, the listing and
paging, bad input refused with nothing written, the privacy gate and tenant isolation, the sessions bucket in
recall/multi, and the resume context: byte-identical across a rebuild, with no worker, Redis or embedder."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from projections.runner import catch_up
from projections.sessions import SessionsProjector

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database

OPENAI = [
    {"role": "system", "content": "You are a deploy assistant."},
    {"role": "user", "content": [{"type": "text", "text": "Roll back the payments deploy"}]},
    {"role": "assistant", "content": None, "refusal": None,
     "tool_calls": [{"id": "call_1", "type": "function",
                     "function": {"name": "rollback", "arguments": "{\"service\": \"payments\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "payments rolled back to v41"},
    {"role": "assistant", "content": "Payments is back on v41."},
]


def project(engine) -> None:
    catch_up(engine, SessionsProjector(), 1000, max_seconds=120)


def events_of(engine, tenant: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t"), {"t": tenant}).scalar_one()


def test_append_an_openai_list_as_is_then_page_it(client: TestClient, engine, tenant: str) -> None:
    r = client.post("/v1/sessions/s1/messages", json={"messages": OPENAI, "agent_id": "deployer"})
    assert r.status_code == 201, r.text
    assert len(r.json()["message_ids"]) == 5
    one = client.post("/v1/sessions/s1/messages", json={"role": "user", "content": "thanks", "message_id": "last"})
    assert one.status_code == 201 and one.json()["message_ids"] == ["last"]
    project(engine)
    page = client.get("/v1/sessions/s1/messages", params={"limit": 4}).json()
    assert [m["seq"] for m in page["messages"]] == [1, 2, 3, 4] and page["next_after_seq"] == 4
    tool = page["messages"][3]
    assert tool["tool_name"] == "rollback" and tool["content"] == "payments rolled back to v41"
    assert page["messages"][1]["content"] == "Roll back the payments deploy"
    assert page["messages"][2]["tool_calls"][0]["function"]["name"] == "rollback"
    rest = client.get("/v1/sessions/s1/messages", params={"after_seq": 4}).json()
    assert [m["message_id"] for m in rest["messages"]][-1] == "last" and rest["next_after_seq"] is None
    listing = client.get("/v1/sessions").json()["sessions"]
    assert listing[0]["session_id"] == "s1" and listing[0]["messages"] == 6 and listing[0]["agent_id"] == "deployer"
    assert listing[0]["first_at"] <= listing[0]["last_at"]
    bare = client.post("/v1/sessions/s2/messages", json=OPENAI)  # the agent's own message list, not wrapped
    assert bare.status_code == 201, bare.text
    assert len(bare.json()["message_ids"]) == 5


def test_sessions_newest_first_paged(client: TestClient, engine) -> None:
    for i in range(5):
        at = f"2026-01-0{i + 1}T10:00:00Z"
        assert client.post(f"/v1/sessions/day{i}/messages",
                           json={"role": "user", "content": f"day {i}", "created_at": at}).status_code == 201
    project(engine)
    first = client.get("/v1/sessions", params={"limit": 2}).json()
    second = client.get("/v1/sessions", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    third = client.get("/v1/sessions", params={"limit": 2, "cursor": second["next_cursor"]}).json()
    ids = [s["session_id"] for page in (first, second, third) for s in page["sessions"]]
    assert ids == ["day4", "day3", "day2", "day1", "day0"] and third["next_cursor"] is None


def test_pending_then_sent(client: TestClient, engine) -> None:
    client.post("/v1/sessions/p/messages", json={"messages": [
        {"role": "user", "content": "what is the quokka plan"},
        {"message_id": "out-1", "role": "assistant", "content": "the quokka plan is ready", "sent": False}]})
    project(engine)
    assert [m["message_id"] for m in client.get("/v1/sessions/p/messages").json()["messages"]] != ["out-1"]
    assert len(client.get("/v1/sessions/p/messages", params={"include_unsent": True}).json()["messages"]) == 2
    assert "ready" not in client.get("/v1/sessions/p/resume").json()["context"]
    r = client.post("/v1/sessions/p/messages/out-1/sent")
    assert r.status_code == 200 and r.json()["changed"] is True
    assert client.post("/v1/sessions/p/messages/out-1/sent").json()["changed"] is False
    assert client.post("/v1/sessions/p/messages/nope/sent").status_code == 404
    assert "the quokka plan is ready" in client.get("/v1/sessions/p/resume").json()["context"]


def test_bad_input_is_refused_and_nothing_is_written(client: TestClient, engine, tenant: str) -> None:
    from infra.settings import get_settings

    huge = "x" * (get_settings().sessions.max_session_message_chars + 1)
    cases = [({"role": "developer", "content": "hi"}, 422),
             ({"messages": [{"role": "user", "content": "ok"}, {"role": "function", "content": "x"}]}, 422),
             ({"messages": [{"role": "user", "content": "ok"}, {"role": "user", "content": huge}]}, 413),
             ({"role": "user", "content": [{"type": "text"}]}, 422),
             ({"messages": []}, 422),
             ([], 422),
             ([{"role": "user", "content": "ok"}, "not a message"], 422),
             ({"role": "user", "content": "nul \u0000"}, 422),
             ({"role": "user", "content": "x", "created_at": "3000-01-01T00:00:00Z"}, 422),
             ({"role": "user", "content": "x", "metadata": {"k": "v" * 20000}}, 422),
             ({"messages": [{"role": "user", "message_id": "a"}, {"role": "user", "message_id": "a"}]}, 422)]
    for body, status in cases:
        r = client.post("/v1/sessions/bad/messages", json=body)
        assert r.status_code == status, (body if len(str(body)) < 200 else status, r.text[:300])
    assert client.post("/v1/sessions/" + "s" * 129 + "/messages", json={"role": "user"}).status_code == 422
    assert client.get("/v1/sessions/bad/resume", params={"budget_tokens": 10}).status_code == 422
    assert events_of(engine, tenant) == 0


def test_privacy_gate_and_tenant_isolation(client: TestClient, app, engine, tenant: str,
                                           monkeypatch) -> None:
    from services.privacy import set_privacy_policy

    def set_policy(_: TestClient, policy: dict) -> None:  # the operator's PUT /v1/policy/privacy, by its service
        set_privacy_policy(engine, tenant, policy, {"actor": "test", "source": "test"})

    client.post("/v1/sessions/secret/messages", json={"role": "user", "content": "the walrus salary", "agent_id": "hr"})
    client.post("/v1/sessions/open/messages", json={"role": "user", "content": "the walrus deploy"})
    project(engine)
    set_policy(client, {"exclude_sessions": ["secret"]})
    for path in ("/v1/sessions/secret/messages", "/v1/sessions/secret/resume"):
        assert client.get(path).status_code == 404
    assert [s["session_id"] for s in client.get("/v1/sessions").json()["sessions"]] == ["open"]
    body = client.post("/v1/recall/multi", json={"query": "walrus", "domains": ["sessions"]}).json()
    assert [r["handle"]["session_id"] for r in body["buckets"][0]["results"]] == ["open"]
    set_policy(client, {"exclude_agents": ["hr"]})
    assert client.get("/v1/sessions/secret/resume").status_code == 404
    set_policy(client, {})
    assert client.get("/v1/sessions/secret/resume").status_code == 200
    # Another tenant's key sees none of it.
    import api.context
    from infra.settings import get_settings, replace

    both = replace(get_settings(), api_keys={f"key-{tenant}": tenant, "key-other": f"{tenant}-other"})
    monkeypatch.setattr(api.context, "get_settings", lambda: both)
    http = TestClient(app, headers={"Authorization": "Bearer key-other"})
    assert client.get("/v1/sessions/open/messages").status_code == 200
    assert http.get("/v1/sessions/open/messages").status_code == 404
    assert http.get("/v1/sessions/open/resume").status_code == 404
    assert "open" not in [s["session_id"] for s in http.get("/v1/sessions").json()["sessions"]]


def test_the_sessions_bucket_in_recall_multi(client: TestClient, engine) -> None:
    client.post("/v1/sessions/s/messages", json={"messages": OPENAI})
    project(engine)
    body = client.post("/v1/recall/multi", json={"query": "roll back payments", "k": 4}).json()
    assert [b["domain"] for b in body["buckets"]] == ["sessions"]
    [result] = body["buckets"][0]["results"]
    assert result["handle"]["session_id"] == "s" and len(result["fields"]["window"]) == 5
    record = client.get(f"/v1/recalls/{body['recall_id']}").json()
    assert [r["domain"] for r in record["results"]] == ["sessions"] and record["results"][0]["handle"]["seq"]


def test_resume_is_byte_identical_across_a_rebuild_and_needs_no_redis_or_embedder(
        client: TestClient, engine, monkeypatch) -> None:
    from projections.rebuild import rebuild

    messages = []
    for t in range(45):
        messages += [{"role": "user", "content": f"step {t}: what next?"},
                     {"role": "tool", "tool_name": f"probe{t % 3}", "content": f"probe result {t}"},
                     {"role": "assistant", "content": f"done step {t}", "checkpoint": t == 5}]
    assert client.post("/v1/sessions/long/messages", json={"messages": messages}).status_code == 201
    before = client.get("/v1/sessions/long/resume", params={"budget_tokens": 20000})
    text_before = client.get("/v1/sessions/long/resume", params={"format": "text"}).content
    assert before.status_code == 200 and before.json()["items"]["turns"] == 30
    project(engine)
    rebuild(engine, SessionsProjector())

    import infra.broker
    import infra.embedding

    def down(*a, **k):
        raise ConnectionError("down")

    monkeypatch.setattr(infra.broker.broker, "enqueue", down)  # Redis unreachable
    monkeypatch.setattr(infra.embedding, "get_embedder", down)  # the embedder down
    after = client.get("/v1/sessions/long/resume", params={"budget_tokens": 20000})
    assert after.content == before.content
    assert client.get("/v1/sessions/long/resume", params={"format": "text"}).content == text_before
