"""A governed write queued behind another on its scope's lock fails fast with a clear 503, and writes nothing."""

from __future__ import annotations

from sqlalchemy import text


def test_a_write_waiting_too_long_for_its_scope_lock_is_a_503(client, engine, tenant, monkeypatch):
    import services.append_events
    from infra.settings import get_settings, replace
    from services.neighbours import scope_lock_key

    quick = replace(get_settings(), governance_lock_timeout_s=0.3)
    monkeypatch.setattr(services.append_events, "get_settings", lambda: quick)
    with engine.connect() as holder, holder.begin():  # another write holds the scope (tenant, "busy", None)
        holder.execute(text("SELECT pg_advisory_xact_lock(CAST(:k AS bigint))"),
                       {"k": scope_lock_key(tenant, ("busy", None))})
        r = client.post("/v1/memories", json={"content": "Jonas renewed the TLS certificate", "agent_id": "busy"})
        assert r.status_code == 503, r.text
        assert r.json()["error"] and "retry" in r.json()["detail"]
        elsewhere = client.post("/v1/memories", json={"content": "Jonas renewed the TLS certificate",
                                                      "agent_id": "free"})
        assert elsewhere.status_code == 201, elsewhere.text  # another scope is not held up
    with engine.connect() as conn:
        recorded = conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t AND type = 'MemoryRecorded'"),
                                {"t": tenant}).scalar_one()
    assert recorded == 1  # the refused write left nothing
    again = client.post("/v1/memories", json={"content": "Jonas renewed the TLS certificate", "agent_id": "busy"})
    assert again.status_code == 201, again.text
