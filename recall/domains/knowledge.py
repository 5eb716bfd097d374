"""The knowledge domain: recall over the library's `##` sections, and the drill (an exact section by its handle).

search: Okapi BM25 over the sections in scope (recall/keyword.py with the sections' tables) ∪ the vector leg over
the sections that have a vector of the configured model (knowledge_section_vectors, filled lazily from the
hit-log by the embedding worker), fused by domain/ranking.fuse: a section without a vector is scored on its
BM25 leg renormalised to weight 1. Active and dormant sections answer; with include_history, replaced, retired
and archived ones too, scored ×0.1. Every answered section passes the privacy gate (its path, tags, project).

A result's handle {path, heading_path, content_hash, version, project} names the section by its content, so a
drill finds the exact text a recall answered even after the document changed (and says whether it did).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine, text

from domain.events import document_stream
from domain.knowledge.handles import HISTORY, HISTORY_FACTOR, LIVE, RECALLED, handle_section
from domain.privacy import PrivacyPolicy
from domain.ranking import Candidate, fuse
from domain.text import tokenize
from infra.settings import get_settings
from recall.domains.base import DomainAnswer, DomainHit, DomainQuery
from recall.keyword import SECTION_KEYWORD, bm25_top
from recall.scope import Scope
from recall.vector import SECTION_VECTORS, nearest_vectors

KNOWLEDGE = "knowledge"

_COLUMNS = ("s.section_id, s.project, s.path, s.heading_path, s.ordinal, s.content_hash, s.version, s.text, s.title,"
            " s.tags, s.status, s.ref_count, s.last_referenced_at")
_ROWS = text(f"SELECT {_COLUMNS} FROM knowledge_sections s WHERE s.tenant = :tenant AND s.section_id = ANY(:ids)")
_COSINES = text("""
SELECT section_id, 1 - (embedding <=> CAST(:q AS vector)) AS cosine FROM knowledge_section_vectors
WHERE tenant = :tenant AND model = :model AND section_id = ANY(:ids)
""")
_HAS_DATA = text("""
SELECT EXISTS (SELECT 1 FROM knowledge_sections WHERE tenant = :tenant AND status = ANY(:statuses)
               AND (CAST(:project AS text) IS NULL OR project = :project))
""")
_CURRENT = text(f"""
SELECT {_COLUMNS} FROM knowledge_sections s
WHERE s.tenant = :tenant AND s.document_id = :document_id AND s.heading_path = :heading_path
  AND s.status = ANY(:live)
ORDER BY s.version DESC LIMIT 1
""")


def _scope(scope: Scope) -> Scope:
    """Sections belong to a project (or none), not to an agent or session: only the tenant and project filter."""
    return Scope(scope.tenant, project=scope.project)


def _gate_sql(policy: PrivacyPolicy) -> tuple[str, dict[str, object]]:
    """What the policy excludes that SQL can filter cheaply (tags, projects); paths are checked per item."""
    clauses, params = [], {}
    if policy.exclude_tags:
        clauses.append("NOT (d.tags && CAST(:x_tags AS text[]))")
        params["x_tags"] = list(policy.exclude_tags)
    if policy.exclude_projects:
        clauses.append("(d.project IS NULL OR NOT d.project = ANY(:x_projects))")
        params["x_projects"] = list(policy.exclude_projects)
    return " AND ".join(clauses), params


def excluded(policy: PrivacyPolicy, row: Any) -> bool:
    return policy.excludes(path=row.path, tags=row.tags or (), project=row.project)


def handle_of(row: Any) -> dict[str, Any]:
    return {"path": row.path, "heading_path": row.heading_path, "content_hash": row.content_hash,
            "version": row.version, "project": row.project}


def section_out(row: Any) -> dict[str, Any]:
    return {"path": row.path, "project": row.project, "heading_path": row.heading_path, "ordinal": row.ordinal,
            "content_hash": row.content_hash, "version": row.version, "text": row.text, "title": row.title,
            "tags": list(row.tags or []), "status": row.status, "ref_count": row.ref_count,
            "last_referenced_at": row.last_referenced_at}


class KnowledgeDomain:
    name = KNOWLEDGE

    def has_data(self, conn: Connection, scope: Scope) -> bool:
        return bool(conn.execute(_HAS_DATA, {"tenant": scope.tenant, "statuses": list(RECALLED),
                                             "project": scope.project}).scalar_one())

    def search(self, engine: Engine, q: DomainQuery) -> DomainAnswer:
        settings = get_settings()
        scope = _scope(q.scope)
        statuses = RECALLED + HISTORY if q.include_history else RECALLED
        gate = _gate_sql(q.policy)
        # Paths are gated per item after the query: ask for more when some may be dropped.
        n = max(settings.candidates_per_leg, q.k * 3) * (2 if q.policy.exclude_paths else 1)
        with engine.connect() as conn:
            conn.exec_driver_sql("SET TRANSACTION READ ONLY")
            if not self.has_data(conn, scope) and not q.include_history:
                return DomainAnswer([], "no data")
            bm25 = bm25_top(conn, scope, tokenize(q.query), n, settings.bm25_k1, settings.bm25_b, statuses,
                            SECTION_KEYWORD, *gate)
            vector: dict[Any, float] = {}
            if q.query_vector is not None:
                [(nearest, _)] = nearest_vectors(conn, scope, [q.query_vector], n, settings, statuses,
                                                 SECTION_VECTORS, *gate)
                vector = dict(nearest)
            ids = sorted(set(bm25) | set(vector), key=str)
            if not ids:
                return DomainAnswer([], "no match")
            if q.query_vector is not None:
                missing = [i for i in ids if i not in vector]
                if missing:
                    vector.update({r.section_id: float(r.cosine) for r in conn.execute(_COSINES, {
                        "tenant": scope.tenant, "model": settings.embedding_model, "ids": missing,
                        "q": q.query_vector})})
            rows = {r.section_id: r for r in conn.execute(_ROWS, {"tenant": scope.tenant, "ids": ids})}
        allowed = [i for i in ids if i in rows and not excluded(q.policy, rows[i])]
        fused = fuse([Candidate(i, bm25.get(i), vector.get(i)) for i in allowed], settings.weight_vector,
                     settings.weight_keyword, settings.score_threshold)
        hits = []
        for s in fused:
            row = rows[s.memory_id]
            factor = HISTORY_FACTOR if row.status in HISTORY else 1.0
            hits.append(DomainHit(
                content=row.text, score=s.score * factor, handle=handle_of(row),
                legs={"keyword": s.bm25, "vector": s.cosine},
                fields={"title": row.title, "path": row.path, "heading_path": row.heading_path,
                        "tags": list(row.tags or []), "version": row.version, "status": row.status},
                explanation={"bm25_normalised": s.bm25_normalised, "weight_vector": s.weight_vector,
                             "weight_keyword": s.weight_keyword, "history_factor": factor}))
        hits.sort(key=lambda h: (-h.score, h.handle["path"], h.handle["heading_path"]))
        reason = None if hits else ("excluded" if len(allowed) < len(ids) else "below threshold")
        return DomainAnswer(hits[:q.k], reason, {"candidates": len(ids), "gated": len(ids) - len(allowed)})

    def fetch(self, conn: Connection, scope: Scope, handle: dict[str, Any], policy: PrivacyPolicy) -> Any:
        """{"section": the exact section the handle names (any status), "current": the section now at its
        (document, heading path) or None, "current_differs": whether that text differs}; None when unknown or
        excluded."""
        sid = handle_section(scope.tenant, handle)
        if sid is None:
            return None
        row = conn.execute(_ROWS, {"tenant": scope.tenant, "ids": [sid]}).first()
        if row is None or excluded(policy, row):
            return None
        current = conn.execute(_CURRENT, {"tenant": scope.tenant, "heading_path": row.heading_path,
                                          "document_id": document_stream(row.project, row.path),
                                          "live": list(LIVE)}).first()
        if current is not None and excluded(policy, current):
            current = None
        return {"section": section_out(row), "current": section_out(current) if current is not None else None,
                "current_differs": current is None or current.content_hash != row.content_hash}


__all__ = ["KNOWLEDGE", "KnowledgeDomain", "handle_of", "section_out"]
