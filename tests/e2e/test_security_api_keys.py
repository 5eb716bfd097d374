"""API keys: any bytes in the bearer token are a clean 401, and the log never holds a piece of a key."""

from __future__ import annotations

from sqlalchemy import text


def test_a_non_ascii_bearer_token_is_401_not_500(client, engine, tenant):
    for token in ("clé".encode(), b"\xff\xfe", "鍵".encode(), b"key-\xe9"):
        r = client.get("/v1/events", headers={"Authorization": b"Bearer " + token})
        assert r.status_code == 401, (token, r.status_code, r.text)
        assert r.json()["error"] == "http_error" and r.headers["www-authenticate"] == "Bearer"
    assert client.get("/v1/events").status_code == 200  # the real key still works


def test_event_metadata_names_the_key_without_revealing_it(client, engine, tenant):
    from api.context import key_id

    key = f"key-{tenant}"
    written = client.post("/v1/memories", json={"content": "the archive opens at nine", "must_keep": True})
    assert written.status_code == 201, written.text
    with engine.connect() as conn:
        metadata = conn.execute(text("SELECT metadata FROM events WHERE tenant = :t"), {"t": tenant}).scalars().all()
    actors = {m.get("requested_by", m["actor"]) for m in metadata}
    assert actors == {f"api-key:{key_id(key)}"}
    for actor in actors:
        named = actor.removeprefix("api-key:")
        assert key[:4] not in named and tenant not in named
        assert all(key[i:i + 4] not in actor for i in range(len(key) - 3))
    # Stable and distinct: the same key is one name in every request, two keys are two names.
    assert key_id(key) == key_id(key) and key_id(key) != key_id(key + "x")
