"""The knowledge library over HTTP (api/routes/knowledge.py): put/get/delete/batch, the drill by handle after the
document changed (and its hit-log event), bad input refused with a 4xx and nothing written, tenant isolation."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text

from domain.knowledge.sections import split_sections
from projections.knowledge import KnowledgeProjector
from projections.runner import catch_up

V1 = "# Ops\r\nintro\r\n## Rollback\r\nrun deploy --undo\r\n## Canary\r\nship to 5%\r\n"
V2 = V1.replace("deploy --undo", "deploy --undo and page oncall")


def project(engine) -> None:
    catch_up(engine, KnowledgeProjector(), 500, max_seconds=120)


def count(engine, tenant: str, type_: str | None = None) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t AND (CAST(:ty AS text) IS NULL"
                                 " OR type = :ty)"), {"t": tenant, "ty": type_}).scalar()


def test_put_get_versions_and_noop(client) -> None:
    r = client.put("/v1/knowledge/ops/deploys.md", json={"content": V1, "title": "Ops", "tags": ["ops"]})
    assert r.status_code == 200, r.text
    assert (r.json()["version"], r.json()["changed"], r.json()["sections"]) == (1, True, 3)
    again = client.put("/v1/knowledge/ops/deploys.md", json={"content": V1, "title": "Ops", "tags": ["ops"]})
    assert (again.json()["version"], again.json()["changed"]) == (1, False)
    raw = client.put("/v1/knowledge/ops/deploys.md", content=V2.encode(),
                     headers={"content-type": "text/markdown; charset=utf-8"}, params={"title": "Ops", "tag": "ops"})
    assert raw.status_code == 200, raw.text
    assert (raw.json()["version"], raw.json()["sections_changed"]) == (2, 1)
    got = client.get("/v1/knowledge/ops/deploys.md").json()
    assert got["content"].encode() == V2.encode() and got["version"] == 2 and got["tags"] == ["ops"]
    assert client.get("/v1/knowledge/ops/deploys.md", params={"version": 1}).json()["content"] == V1
    assert client.get("/v1/knowledge/ops/deploys.md", params={"version": 9}).status_code == 404
    assert client.get("/v1/knowledge/ops/other.md").status_code == 404


def test_drill_by_handle_after_the_document_changed(client, engine, tenant) -> None:
    client.put("/v1/knowledge/ops/deploys.md", json={"content": V1})
    project(engine)
    old = next(s for s in split_sections(V1) if s.heading_path == "Ops > Rollback")
    client.put("/v1/knowledge/ops/deploys.md", json={"content": V2})
    project(engine)
    r = client.get("/v1/knowledge-sections", params={"path": "ops/deploys.md", "heading_path": "Ops > Rollback",
                                                     "content_hash": old.content_hash})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["section"]["text"].encode() == old.text.encode()  # the exact slice, CRLF and all
    assert body["current_differs"] and "page oncall" in body["current"]["text"]
    now = client.get("/v1/knowledge-sections", params={"path": "ops/deploys.md", "heading_path": "Ops > Rollback"})
    assert not now.json()["current_differs"] and now.json()["section"]["version"] == 2
    at_v1 = client.get("/v1/knowledge-sections", params={"path": "ops/deploys.md", "heading_path": "Ops > Rollback",
                                                         "version": 1})
    assert at_v1.json()["section"]["text"] == old.text
    assert count(engine, tenant, "ResultDrilled") == 3
    project(engine)
    with engine.connect() as conn:
        refs = conn.execute(text("SELECT sum(ref_count) FROM knowledge_sections WHERE tenant = :t"),
                            {"t": tenant}).scalar()
    assert refs == 3
    missing = client.get("/v1/knowledge-sections", params={"path": "ops/deploys.md", "heading_path": "Nope"})
    assert missing.status_code == 404
    unknown_recall = client.get("/v1/knowledge-sections", params={
        "path": "ops/deploys.md", "heading_path": "Ops > Rollback", "recall_id": str(uuid.uuid4())})
    assert unknown_recall.status_code == 404
    assert count(engine, tenant, "ResultDrilled") == 3


def test_delete_retires(client, engine) -> None:
    client.put("/v1/knowledge/a.md", json={"content": "## A\nx\n"})
    r = client.delete("/v1/knowledge/a.md")
    assert r.status_code == 200 and r.json()["changed"]
    assert client.get("/v1/knowledge/a.md").json()["retired"]
    assert client.delete("/v1/knowledge/nothing.md").status_code == 404


@pytest.mark.parametrize(("url", "kwargs", "status"), [
    ("/v1/knowledge/%2E%2E/secret.md", {"json": {"content": "x"}}, 422),
    ("/v1/knowledge/a/%2E%2E/%2E%2E/b.md", {"json": {"content": "x"}}, 422),
    ("/v1/knowledge//etc/passwd", {"json": {"content": "x"}}, 422),
    ("/v1/knowledge/a%00b.md", {"json": {"content": "x"}}, 422),
    ("/v1/knowledge/a%5Cb.md", {"json": {"content": "x"}}, 422),
    ("/v1/knowledge/ok.md", {"json": {"content": "nul \u0000 here"}}, 422),
    ("/v1/knowledge/ok.md", {"content": b"caf\xe9", "headers": {"content-type": "text/plain"}}, 422),
    ("/v1/knowledge/ok.md", {"content": b"{\"content\": \"caf\xe9\"}", "headers": {"content-type": "application/json"}},
     422),
    ("/v1/knowledge/ok.md", {"content": b"x", "headers": {"content-type": "image/png"}}, 422),
    ("/v1/knowledge/ok.md", {"json": {"content": "é" * (1024 * 1024 + 1)}}, 413),
    ("/v1/knowledge/ok.md", {"json": {"content": "x", "tags": ["t" * 200]}}, 422),
])
def test_bad_input_refused_nothing_written(client, engine, tenant, url, kwargs, status) -> None:
    r = client.put(url, **kwargs)
    assert r.status_code == status, r.text
    assert r.json()["detail"]
    assert count(engine, tenant) == 0


def test_batch_all_or_nothing(client, engine, tenant) -> None:
    bad = client.post("/v1/knowledge/batch", json={"documents": [{"path": "a.md", "content": "a"},
                                                                 {"path": "../b.md", "content": "b"}]})
    assert bad.status_code == 422 and "'..'" in str(bad.json()["detail"])
    assert count(engine, tenant) == 0
    ok = client.post("/v1/knowledge/batch", json={"documents": [{"path": "a.md", "content": "a"},
                                                                {"path": "b.md", "content": "b", "project": "p"}]})
    assert ok.status_code == 201 and [d["version"] for d in ok.json()["documents"]] == [1, 1]
    assert client.get("/v1/knowledge/b.md", params={"project": "p"}).status_code == 200
    assert client.get("/v1/knowledge/b.md").status_code == 404  # another project's document


def test_tenant_isolation(app, monkeypatch, engine) -> None:
    from fastapi.testclient import TestClient

    import api.context
    from infra.settings import get_settings, replace

    a, b = f"t-{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex[:8]}"
    settings = replace(get_settings(), api_keys={f"k-{a}": a, f"k-{b}": b})
    monkeypatch.setattr(api.context, "get_settings", lambda: settings)
    with TestClient(app, headers={"Authorization": f"Bearer k-{a}"}) as ca, \
            TestClient(app, headers={"Authorization": f"Bearer k-{b}"}) as cb:
        assert ca.put("/v1/knowledge/secret.md", json={"content": "## S\nA's secret\n"}).status_code == 200
        project(engine)
        assert cb.get("/v1/knowledge/secret.md").status_code == 404
        assert cb.get("/v1/knowledge-sections", params={"path": "secret.md", "heading_path": "S"}).status_code == 404
        assert cb.delete("/v1/knowledge/secret.md").status_code == 404
        assert cb.put("/v1/knowledge/secret.md", json={"content": "## S\nB's own\n"}).json()["version"] == 1
        assert ca.get("/v1/knowledge/secret.md").json()["content"] == "## S\nA's secret\n"
