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
