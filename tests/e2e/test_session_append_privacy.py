"""An append to a session the privacy policy excludes is refused with nothing written, and its answer is the same
whether the log holds that session or not (it used to be written into the hidden session, 201, and a probe with
another agent_id answered "belongs to another agent_id": an oracle on an excluded session)."""

from __future__ import annotations

from privacy_support import privacy_clients, put_policy
from sqlalchemy import text


def _count(engine, tenant: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t"), {"t": tenant}).scalar_one()


def test_an_append_to_an_excluded_session_is_refused_as_for_an_unknown_one(app, tenant, engine, monkeypatch):
    w = privacy_clients(app, tenant, monkeypatch)
    r = w.reader
    for sid, agent in (("s-hidden", "qa"), ("s-open", "qa"), ("s-by-agent", "secret-agent")):
        answer = r.post(f"/v1/sessions/{sid}/messages", json={"role": "user", "content": "hi", "agent_id": agent})
        assert answer.status_code == 201, answer.text
    policy = {"exclude_sessions": ["s-hidden", "s-never"], "exclude_agents": ["secret-agent"]}
    assert put_policy(w.ops, policy).status_code == 200
    before = _count(engine, tenant)

    for body in ({"role": "user", "content": "probe"}, {"role": "user", "content": "probe", "agent_id": "other"},
                 {"messages": [{"role": "user", "content": "probe"}], "agent_id": "qa"}):
        hidden = r.post("/v1/sessions/s-hidden/messages", json=body)
        unknown = r.post("/v1/sessions/s-never/messages", json=body)
        assert hidden.status_code == unknown.status_code == 422, (hidden.text, unknown.text)
        assert hidden.json()["detail"].replace("s-hidden", "X") == unknown.json()["detail"].replace("s-never", "X")
        assert "privacy policy" in hidden.text
        # an append naming an excluded agent, and one into a session whose first append's agent is excluded
        assert r.post("/v1/sessions/s-new/messages", json={**body, "agent_id": "secret-agent"}).status_code == 422
        assert r.post("/v1/sessions/s-by-agent/messages", json=body).status_code == 422
    assert _count(engine, tenant) == before  # nothing written

    visible = r.post("/v1/sessions/s-open/messages", json={"role": "user", "content": "still open"})
    assert visible.status_code == 201, visible.text


def test_a_put_of_an_excluded_document_or_code_file_is_refused_as_for_an_unknown_one(app, tenant, engine,
                                                                                      monkeypatch):
    w = privacy_clients(app, tenant, monkeypatch)
    r = w.reader
    doc = {"content": "# T\n\n## S\nsecret body\n"}
    assert r.put("/v1/knowledge/hr/pay.md", json=doc).status_code == 200
    assert r.put("/v1/knowledge/tagged.md", json={**doc, "tags": ["secret"]}).status_code == 200
    src = {"path": "pay.py", "content": "def salary():\n    return 1\n"}
    assert r.post("/v1/code/eng/files", json={"files": [src]}).status_code == 200
    policy = {"exclude_paths": ["hr/**", "eng/pay.py", "eng/never.py"], "exclude_tags": ["secret"]}
    assert put_policy(w.ops, policy).status_code == 200
    before = _count(engine, tenant)

    # the same content (was "changed": false, telling the log holds it), another, and a path never written
    for body in (doc, {"content": "# T\n\n## S\nguess\n"}):
        hidden = r.put("/v1/knowledge/hr/pay.md", json=body)
        unknown = r.put("/v1/knowledge/hr/never.md", json=body)
        assert hidden.status_code == unknown.status_code == 422, (hidden.text, unknown.text)
        assert hidden.json()["detail"].replace("pay", "X") == unknown.json()["detail"].replace("never", "X")
        # excluded by its current tags (a put without them), and a batch holding an excluded one
        assert r.put("/v1/knowledge/tagged.md", json=body).status_code == 422
        # in a batch (a folder sync) an excluded document is skipped, answered alike known or not
        batch = {"documents": [{"path": "hr/pay.md", **body}, {"path": "hr/never.md", **body}]}
        answer = r.post("/v1/knowledge/batch", json=batch)
        assert answer.status_code == 201, answer.text
        known, never = answer.json()["documents"]
        assert {**known, "path": "X"} == {**never, "path": "X"} and not known["changed"] and known["version"] == 0
    for f in (src, {"path": "pay.py", "content": "x = 2\n"}, {"path": "pay.py", "remove": True}):
        answer = r.post("/v1/code/eng/files", json={"files": [f, {**f, "path": "never.py"}]})
        assert answer.status_code == 200, answer.text
        hidden, unknown = answer.json()["files"]
        assert {**hidden, "path": "X"} == {**unknown, "path": "X"}, (hidden, unknown)
        assert hidden["action"] == "excluded" and answer.json()["written"] == 0
    assert _count(engine, tenant) == before  # nothing written

    assert r.put("/v1/knowledge/open.md", json=doc).status_code == 200
    put = r.post("/v1/code/eng/files", json={"files": [{**src, "path": "open.py"}, {**src, "path": "open2.py"}]})
    assert put.status_code == 200 and put.json()["position"] == max(f["position"] for f in put.json()["files"])


def test_a_write_superseding_an_excluded_memory_is_a_404_as_for_an_unknown_one(app, tenant, engine, monkeypatch):
    import uuid

    w = privacy_clients(app, tenant, monkeypatch)
    r = w.reader
    hidden = r.post("/v1/memories", json={"content": "Grace's vault code is 4242", "tags": ["secret"],
                                          "must_keep": True}).json()["memory_id"]
    assert put_policy(w.ops, {"exclude_tags": ["secret"]}).status_code == 200
    before = _count(engine, tenant)
    unknown = str(uuid.uuid4())
    for route, wrap in (("/v1/memories", lambda m: m), ("/v1/memories/batch", lambda m: {"memories": [m]})):
        answers = [r.post(route, json=wrap({"content": "Grace's vault code is 9999", "supersedes": old,
                                            "reason": "changed"})) for old in (hidden, unknown)]
        assert [a.status_code for a in answers] == [404, 404], [a.text for a in answers]
        assert answers[0].json()["detail"].replace(hidden, "X") == answers[1].json()["detail"].replace(unknown, "X")
    assert _count(engine, tenant) == before  # nothing written, the hidden memory not superseded


def test_the_governor_does_not_reinforce_into_an_excluded_memory(app, tenant, engine, monkeypatch):
    """A write repeating a memory the policy hides is decided as if that memory were not there: it is admitted on
    its own, and its answer never names the hidden memory (it was discarded into it, answering its id)."""
    from funnel_support import project

    w = privacy_clients(app, tenant, monkeypatch)
    r = w.reader
    text_of = "Grace's vault code at the Lisbon office is 4242"
    hidden = r.post("/v1/memories", json={"content": text_of, "tags": ["secret"], "agent_id": "qa2"}).json()
    project(engine, hidden["position"])
    visible = r.post("/v1/memories", json={"content": "Grace's gym locker at the Lisbon office is 17",
                                           "agent_id": "qa2"}).json()
    project(engine, visible["position"])
    assert put_policy(w.ops, {"exclude_tags": ["secret"]}).status_code == 200
    again = r.post("/v1/memories", json={"content": text_of, "agent_id": "qa2"})
    assert again.status_code == 201, again.text
    assert hidden["memory_id"] not in again.text, again.json()
    assert again.json()["disposition"] != "discard", again.json()
    # an emptied policy: the same repeat reinforces the (now visible) first memory, as it always did
    assert put_policy(w.ops, {}).status_code == 200
    repeat = r.post("/v1/memories", json={"content": text_of, "tags": ["secret"], "agent_id": "qa2"}).json()
    assert repeat.get("reinforced") in (hidden["memory_id"], again.json()["memory_id"]), repeat
