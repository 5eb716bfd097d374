"""The knowledge recall domain (recall/domains/knowledge.py): BM25 over sections, the vector leg for sections that
have a vector, history ×0.1, the privacy gate on every answered section, and the drill by handle."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import text

from domain.privacy import NO_POLICY, PrivacyPolicy
from domain.text import content_hash
from projections.knowledge import KnowledgeProjector
from projections.runner import catch_up
from recall.domains.base import DomainQuery
from recall.domains.knowledge import KnowledgeDomain
from recall.scope import Scope
from services.knowledge import DocumentInput, put_document

META = {"actor": "test", "source": "test"}
DEPLOYS = "# Deploys\nhow we ship\n\n## Rollback\nrun deploy undo to roll back a release\n\n## Canary\nship to 5%\n"
HR = "## Salaries\nthe salary bands for rollback engineers\n"


def setup(engine, tenant: str) -> None:
    put_document(engine, tenant, DocumentInput("ops/deploys.md", DEPLOYS, tags=["ops"]), META)
    put_document(engine, tenant, DocumentInput("hr/salaries.md", HR, tags=["confidential"]), META)
    catch_up(engine, KnowledgeProjector(), 500, max_seconds=120)


def ask(engine, tenant: str, query: str, policy: PrivacyPolicy = NO_POLICY, **kw):
    q = DomainQuery(Scope(tenant), query, kw.pop("k", 5), datetime.now(UTC), policy, **kw)
    return KnowledgeDomain().search(engine, q)


def test_search_answers_exact_sections(engine, tenant: str) -> None:
    setup(engine, tenant)
    answer = ask(engine, tenant, "how do I roll back a release?")
    top = answer.results[0]
    assert top.content == "## Rollback\nrun deploy undo to roll back a release\n\n"
    assert top.handle["path"] == "ops/deploys.md" and top.handle["heading_path"] == "Deploys > Rollback"
    assert top.handle["version"] == 1 and len(top.handle["content_hash"]) == 64
    assert top.legs["keyword"] is not None and top.legs["vector"] is None  # no vector yet: BM25 at weight 1
    assert top.fields["tags"] == ["ops"]
    with engine.connect() as conn:
        assert KnowledgeDomain().has_data(conn, Scope(tenant))
        assert not KnowledgeDomain().has_data(conn, Scope(f"{tenant}-other"))
    assert ask(engine, f"{tenant}-other", "rollback").results == []


def test_privacy_gate_hides_paths_and_tags(engine, tenant: str) -> None:
    setup(engine, tenant)
    assert "hr/salaries.md" in {h.handle["path"] for h in ask(engine, tenant, "rollback salary").results}
    for policy in (PrivacyPolicy(exclude_paths=("hr/**",)), PrivacyPolicy(exclude_tags=("confidential",)),
                   PrivacyPolicy(exclude_paths=("**/salaries*",))):
        paths = {h.handle["path"] for h in ask(engine, tenant, "rollback salary", policy).results}
        assert "hr/salaries.md" not in paths and "ops/deploys.md" in paths
        handle = {"path": "hr/salaries.md", "heading_path": "Salaries", "project": None,
                  "content_hash": content_hash(HR)}
        with engine.connect() as conn:
            assert KnowledgeDomain().fetch(conn, Scope(tenant), handle, policy) is None
            assert KnowledgeDomain().fetch(conn, Scope(tenant), handle, NO_POLICY) is not None


def test_history_scores_replaced_sections_lower(engine, tenant: str) -> None:
    setup(engine, tenant)
    put_document(engine, tenant, DocumentInput("ops/deploys.md", DEPLOYS.replace("roll back", "revert")), META)
    catch_up(engine, KnowledgeProjector(), 500, max_seconds=120)
    now = ask(engine, tenant, "roll back")
    assert all(h.fields["status"] == "active" for h in now.results)
    history = ask(engine, tenant, "roll back", include_history=True)
    replaced = [h for h in history.results if h.fields["status"] == "replaced"]
    assert replaced and replaced[0].explanation["history_factor"] == 0.1


def test_vector_leg_for_sections_with_a_vector(engine, tenant: str) -> None:
    from infra.settings import get_settings

    setup(engine, tenant)
    settings = get_settings()
    vec = "[" + ",".join(["1"] + ["0"] * (settings.embedding.embedding_dim - 1)) + "]"
    with engine.begin() as conn:
        sid = conn.execute(text("SELECT section_id FROM knowledge_sections WHERE tenant = :t AND heading_path = "
                                "'Deploys > Canary'"), {"t": tenant}).scalar_one()
        conn.execute(text("INSERT INTO knowledge_section_vectors VALUES (:t, :s, :m, CAST(:v AS vector))"),
                     {"t": tenant, "s": sid, "m": settings.embedding.embedding_model, "v": vec})
    answer = ask(engine, tenant, "zebra unicorn", query_vector=vec)  # no shared word: the vector leg alone
    [hit] = answer.results
    assert hit.handle["heading_path"] == "Deploys > Canary" and abs(hit.legs["vector"] - 1.0) < 1e-6
    assert hit.legs["keyword"] is None


def test_fetch_by_handle_after_the_document_changed(engine, tenant: str) -> None:
    setup(engine, tenant)
    old = ask(engine, tenant, "roll back release").results[0]
    put_document(engine, tenant, DocumentInput("ops/deploys.md", DEPLOYS.replace("a release", "any release")), META)
    catch_up(engine, KnowledgeProjector(), 500, max_seconds=120)
    with engine.connect() as conn:
        found = KnowledgeDomain().fetch(conn, Scope(tenant), old.handle, NO_POLICY)
    assert found["section"]["text"] == old.content and found["section"]["status"] == "replaced"
    assert found["current_differs"] and "any release" in found["current"]["text"]
