"""POST /v1/events/import: a small corpus (memories with a supersede, a session, a knowledge document) exported over
HTTP from one store (GET /v1/events/export) and imported over HTTP into a second, empty database gives the same
events (ids, streams, versions, types, payloads, actors, times); a second import is refused (409) and a resumed one
appends nothing; a filtered export, a bad body and another tenant's events are refused with a 4xx and write
nothing; a tenant key is refused (403)."""

from __future__ import annotations

import json
import uuid

import pytest
from sqlalchemy import Engine, text

import api.context
from infra.settings import get_settings, replace
from tests.log_support import opened_events

META = {"actor": "test", "source": "test"}


@pytest.fixture
def second_store(engine):
    from infra.db import engine_for
    from migrations.runner import upgrade_to_head

    name = f"import_{uuid.uuid4().hex[:10]}"
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = engine.url.set(database=name).render_as_string(hide_password=False)
    upgrade_to_head(url)
    target = engine_for(url)
    yield target
    target.dispose()
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))


@pytest.fixture
def operator(client, tenant, monkeypatch):
    """`client`, its key an operator's."""
    key = f"key-{tenant}"
    settings = replace(get_settings(), api_keys={key: tenant}, operator_keys=(key,))
    monkeypatch.setattr(api.context, "get_settings", lambda: settings)
    return client


def _corpus(engine: Engine, tenant: str) -> None:
    from services.knowledge import DocumentInput, put_documents
    from services.remember import MemoryInput, remember
    from services.sessions import append_messages

    first = remember(engine, tenant, [MemoryInput("Lisbon trams are yellow", must_keep=True),
                                      MemoryInput("Porto has an iron bridge", must_keep=True)], META)
    remember(engine, tenant, [MemoryInput("Porto's iron bridge is the Dom Luis I", must_keep=True,
                                          supersedes=first[1].memory_id)], META)
    append_messages(engine, tenant, "heron", [
        {"message_id": "q-1", "role": "user", "content": "is the heron deploy done?"},
        {"message_id": "a-1", "role": "assistant", "content": "the heron deploy is rolling out"}], META)
    put_documents(engine, tenant, [DocumentInput("ops/keys.md", "# Keys\n\n## Rotation\n\nRotate them yearly.\n")],
                  META)


def _log(engine: Engine, tenant: str) -> list[tuple]:
    with engine.connect() as conn:
        events = opened_events(conn, "tenant = :t", {"t": tenant})
    return [(e.event_id, e.stream_id, e.stream_version, e.type, e.schema_version, e.data, e.metadata,
             e.occurred_at, e.recorded_at) for e in sorted(events, key=lambda e: e.position)]


def _count(engine: Engine, tenant: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t"), {"t": tenant}).scalar_one()


def _into(app, store: Engine):
    """The app's routes on `store` (the second stack's database) until the returned callable is called."""
    app.dependency_overrides[api.context.engine] = lambda: store
    return lambda: app.dependency_overrides.pop(api.context.engine, None)


def test_an_export_over_http_imports_over_http_into_a_fresh_store(app, operator, engine, tenant, second_store):
    _corpus(engine, tenant)
    export = operator.get("/v1/events/export")
    assert export.status_code == 200
    source = _log(engine, tenant)
    assert len(export.text.splitlines()) == len(source) > 5
    filtered = operator.get("/v1/events/export", params={"type": "MemoryAdmitted"}).content
    done = _into(app, second_store)
    try:
        for body, status, reason in [(b"not json\n", 422, "not a JSON line"), (b"[1, 2]\n", 422, "JSON object"),
                                     (b"{}\n", 422, "lacks"),
                                     (b'{"tenant": "someone-else"}\n', 422, "tenant"), (b"", 422, "no event"),
                                     (filtered, 409, "whole, unfiltered export")]:
            r = operator.post("/v1/events/import", content=body)
            assert r.status_code == status and reason in r.text, (body[:40], r.status_code, r.text)
            assert _count(second_store, tenant) == 0  # refused whole: nothing written
        # a malformed event after good ones is refused whole too
        lines = export.content.splitlines()
        broken = b"\n".join([*lines[:3], lines[3].replace(b'"stream_version":', b'"stream_version":"x",'
                                                                                b'"ignored":')])
        r = operator.post("/v1/events/import", content=broken)
        assert r.status_code == 422 and _count(second_store, tenant) == 0, r.text

        r = operator.post("/v1/events/import", content=export.content)
        assert r.status_code == 200 and r.json() == {"appended": len(source), "already_held": 0}, r.text
        again = operator.post("/v1/events/import", content=export.content)
        assert again.status_code == 409 and "already holds events" in again.text
        resumed = operator.post("/v1/events/import", params={"resume": "true"}, content=export.content)
        assert resumed.status_code == 200 and resumed.json() == {"appended": 0, "already_held": len(source)}
    finally:
        done()
    assert _log(second_store, tenant) == source  # ids, streams, versions, payloads, actors, times


def test_a_tenant_key_may_not_import(client, tenant):
    r = client.post("/v1/events/import", content=json.dumps({"tenant": tenant}).encode())
    assert r.status_code == 403 and "operator" in r.json()["detail"]


def test_an_import_over_the_bound_is_refused(operator, monkeypatch):
    monkeypatch.setattr("api.routes.events_import.MAX_IMPORT_BYTES", 10)
    r = operator.post("/v1/events/import", content=b"x" * 11)
    assert r.status_code == 413 and "at most 10" in r.text
