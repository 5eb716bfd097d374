"""The privacy gate on the knowledge routes: an excluded document is unknown to GET, the listing and the drill."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient

from domain.knowledge.sections import split_sections
from projections.knowledge import KnowledgeProjector
from projections.runner import catch_up

HR = "## Salaries\nbands\n"


@pytest.fixture
def ops(app, tenant, monkeypatch):
    import api.context
    from infra.settings import get_settings, replace

    key = f"kops-{uuid.uuid4().hex}"
    settings = replace(get_settings(), api_keys={key: tenant}, operator_keys=(key,))
    monkeypatch.setattr(api.context, "get_settings", lambda: settings)
    with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as c:
        yield c


@pytest.mark.parametrize("policy", [{"exclude_paths": ["hr/**"]}, {"exclude_tags": ["confidential"]}])
def test_excluded_documents_are_unknown(ops, engine, policy) -> None:
    assert ops.put("/v1/knowledge/hr/salaries.md", json={"content": HR, "tags": ["confidential"]}).status_code == 200
    assert ops.put("/v1/knowledge/ops/deploys.md", json={"content": "## Rollback\nundo\n"}).status_code == 200
    catch_up(engine, KnowledgeProjector(), 500, max_seconds=120)
    assert ops.put("/v1/policy/privacy", json=policy).status_code == 200
    [section] = split_sections(HR)
    assert ops.get("/v1/knowledge/hr/salaries.md").status_code == 404
    assert ops.get("/v1/knowledge/ops/deploys.md").status_code == 200
    assert [d["path"] for d in ops.get("/v1/knowledge").json()["documents"]] == ["ops/deploys.md"]
    for params in ({}, {"content_hash": section.content_hash}, {"version": 1}):
        r = ops.get("/v1/knowledge-sections", params={"path": "hr/salaries.md", "heading_path": "Salaries", **params})
        assert r.status_code == 404, (params, r.text)
    assert ops.get("/v1/knowledge-sections", params={"path": "ops/deploys.md",
                                                     "heading_path": "Rollback"}).status_code == 200
