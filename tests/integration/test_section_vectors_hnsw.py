"""Knowledge section vectors through the HNSW index (migration 0021): a scope of more vectors than
ENGRAMLOG_EXACT_SCAN_MAX_ROWS is searched by an iterative HNSW scan (recall/vector.py), and it answers the
sections of the asked tenant and project only, nearest first, as the exact scan does."""

from __future__ import annotations

import numpy as np
from sqlalchemy import text

from infra.embedding import to_pgvector
from infra.settings import get_settings, replace
from projections.knowledge import KnowledgeProjector
from projections.runner import catch_up
from recall.domains.knowledge import SECTION_VECTORS
from recall.scope import Scope
from recall.vector import nearest_vectors
from services.knowledge import DocumentInput, put_document

META = {"actor": "test", "source": "test"}
TOPICS = ["rollback", "canary", "salaries", "holidays", "oncall", "backups"]


def _unit(i: int, dim: int, noise: float = 0.0, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = np.zeros(dim, dtype=np.float32)
    v[i] = 1.0
    v += rng.normal(scale=noise, size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


def _load(engine, tenant: str) -> dict[tuple[str, str | None, str], str]:
    """The same six sections in two projects of `tenant` and in another tenant, each section's vector near the
    axis of its topic; answers (tenant, project, topic) -> section_id."""
    settings = get_settings()
    body = "".join(f"## {t}\nnotes about {t}\n\n" for t in TOPICS)
    for t_, project in ((tenant, "alpha"), (tenant, "beta"), (f"{tenant}-other", "alpha")):
        put_document(engine, t_, DocumentInput("ops/notes.md", body, project=project), META)
    catch_up(engine, KnowledgeProjector(), 500, max_seconds=120)
    ids: dict[tuple[str, str | None, str], str] = {}
    with engine.begin() as conn:
        rows = conn.execute(text("SELECT tenant, project, heading_path, section_id FROM knowledge_sections "
                                 "WHERE tenant IN (:a, :b)"), {"a": tenant, "b": f"{tenant}-other"}).all()
        for n, r in enumerate(rows):
            topic = r.heading_path.split(" > ")[-1]
            ids[(r.tenant, r.project, topic)] = r.section_id
            conn.execute(text("INSERT INTO knowledge_section_vectors VALUES (:t, :s, :m, CAST(:v AS vector))"),
                         {"t": r.tenant, "s": r.section_id, "m": settings.embedding.embedding_model,
                          "v": to_pgvector(_unit(TOPICS.index(topic), settings.embedding.embedding_dim, 0.05, n))})
    return ids


def _search(engine, scope: Scope, query: np.ndarray, k: int, exact_max: int):
    settings = replace(get_settings(), exact_scan_max_rows=exact_max)
    with engine.connect() as conn, conn.begin():
        [found] = nearest_vectors(conn, scope, [to_pgvector(query)], k, settings, ("active", "dormant"),
                                  SECTION_VECTORS)
    return found


def test_hnsw_path_answers_the_scopes_sections_nearest_first(engine, tenant: str) -> None:
    ids = _load(engine, tenant)
    dim = get_settings().embedding.embedding_dim
    for topic in ("canary", "backups"):
        query = _unit(TOPICS.index(topic), dim)
        for project in ("alpha", "beta"):
            scope = Scope(tenant, project=project)
            graph = _search(engine, scope, query, 3, exact_max=0)  # more vectors than the limit: HNSW
            exact = _search(engine, scope, query, 3, exact_max=10_000)
            assert graph.method.startswith("hnsw_iterative") and exact.method == "exact"
            assert graph.hits[0][0] == ids[(tenant, project, topic)]  # the nearest is the topic's own section
            in_scope = {v for (t_, p, _), v in ids.items() if t_ == tenant and p == project}
            assert {i for i, _ in graph.hits} <= in_scope  # never another project's or tenant's section
            assert [i for i, _ in graph.hits] == [i for i, _ in exact.hits]
        whole = _search(engine, Scope(tenant), query, 12, exact_max=0)
        assert len(whole.hits) == 12  # both projects' sections, none of the other tenant's
        assert {i for i, _ in whole.hits} == {v for (t_, _, _), v in ids.items() if t_ == tenant}


def test_the_index_serves_the_section_vector_order(engine, tenant: str) -> None:
    _load(engine, tenant)
    with engine.connect() as conn, conn.begin():
        conn.execute(text("SET LOCAL enable_seqscan = off"))
        conn.execute(text("SET LOCAL enable_sort = off"))  # a few rows: else read by the key and sorted
        plan = "\n".join(conn.execute(text(
            "EXPLAIN SELECT section_id FROM knowledge_section_vectors v WHERE v.tenant = :t "
            "ORDER BY v.embedding <=> CAST(:q AS vector) LIMIT 5"),
            {"t": tenant, "q": to_pgvector(_unit(0, get_settings().embedding.embedding_dim))}).scalars())
    assert "knowledge_section_vectors_hnsw" in plan
