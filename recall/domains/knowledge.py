"""The knowledge domain: recall over the library's `##` sections, and the drill (an exact section by its handle).

search: Okapi BM25 over the sections in scope (recall/keyword.py with the sections' tables) ∪ the vector leg over
the sections that have a vector of the configured model (knowledge_section_vectors, filled lazily from the
hit-log by the embedding worker), fused by domain/ranking.fuse: a section without a vector is scored on its
BM25 leg renormalised to weight 1 (recall/hybrid.py: the hybrid leg knowledge, transcripts and code share).
Active and dormant sections answer; with include_history, replaced, retired and archived ones too, scored ×0.1.
Every answered section passes the privacy gate (its path, tags, project). The bucket is in calibrated relevance
order (recall/relevance.py), the fused score breaking ties: a section that is only its title ranks below one
that answers.

A result's handle {path, heading_path, content_hash, version, project} names the section by its content, so a
drill finds the exact text a recall answered even after the document changed (and says whether it did).

drill: the exact section a handle names (or the one at a version, or the current one), whether the current text
differs, and one ResultDrilled hit-log event (recall/hitlog.py append_drilled): reads read models and the log
only; that event is its one write. list_documents: the library's documents as the read model has them
(GET /v1/knowledge: what `engramlog knowledge sync` compares its files' content hashes with).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, ScalarSelect, text

from domain.errors import NotFound
from domain.events import RecallServed, document_stream, recall_stream
from domain.knowledge.handles import HISTORY, LIVE, RECALLED, handle_section
from domain.knowledge.sections import has_body, split_sections
from domain.privacy import PrivacyPolicy, document_excluded
from domain.text import tokenize
from eventstore.stream import first_of_type
from infra.db import read_only
from infra.settings import get_settings
from readmodels.item_domains import SECTIONS
from recall.document_log import document_at, unknown_document
from recall.domains.base import DomainAnswer, DomainHit, DomainQuery, data_check, held
from recall.hitlog import append_drilled
from recall.hybrid import HybridLeg, answer, gather, graded, pool_size, scored
from recall.keyword import KeywordTables
from recall.relevance import scale
from recall.scope import Scope
from recall.timeframe import NOW, TimeFrame
from recall.vector import VectorTable
from recall.visible_pages import visible_page

KNOWLEDGE = SECTIONS.name
# Sections are embedded lazily (projections/section_vectors.py): the vector leg covers exactly the embedded ones.
SECTION_VECTORS = VectorTable.of(SECTIONS)
SECTION_LEG = HybridLeg(KeywordTables.of(SECTIONS), SECTION_VECTORS, RECALLED, HISTORY, versions=SECTIONS.versions)

_COLUMNS = ("s.section_id, s.project, s.path, s.heading_path, s.ordinal, s.content_hash, s.version, s.text, s.title,"
            " s.tags, s.status, s.ref_count, s.last_referenced_at")


def _rows(frame: TimeFrame) -> Any:
    return text(f"SELECT {_COLUMNS} FROM {frame.units(SECTIONS.versions)} s"
                " WHERE s.tenant = :tenant AND s.section_id = ANY(:ids)")


def _has_data(frame: TimeFrame) -> str:
    return (f"""
    SELECT EXISTS (SELECT 1 FROM {frame.units(SECTIONS.versions)} s WHERE s.tenant = :tenant
                   AND s.status = ANY(:statuses) AND (CAST(:project AS text) IS NULL OR s.project = :project))
    """)


def _current(frame: TimeFrame) -> Any:
    """The live section at a (document, heading path), now or as of the frame."""
    return text(f"""
    SELECT {_COLUMNS} FROM {frame.units(SECTIONS.versions)} s
    WHERE s.tenant = :tenant AND s.document_id = :document_id AND s.heading_path = :heading_path
      AND s.status = ANY(:live)
    ORDER BY s.version DESC LIMIT 1
    """)


def _scope(scope: Scope) -> Scope:
    """Sections belong to a project (or none), not to an agent or session: only the tenant and project filter."""
    return Scope(scope.tenant, project=scope.project)


def _gate_sql(policy: PrivacyPolicy) -> tuple[str, dict[str, object]]:
    """What the policy excludes that SQL can filter cheaply (tags, projects); paths are checked per item."""
    clauses: list[str] = []
    params: dict[str, object] = {}
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
    times: tuple[str, ...] = ("recorded",)  # no valid time; knowledge_section_versions (as_of)
    read_models = (SECTIONS.projection,)  # what a read of it waits for (min_position); section vectors come lazily
    vector_leg = SECTIONS.vectors is not None  # a vectors table declared: the query's vector is read

    def data_check(self, scope: Scope, frame: TimeFrame = NOW) -> ScalarSelect[Any]:
        return data_check(_has_data(frame), {"tenant": scope.tenant, "statuses": list(RECALLED),
                                             "project": scope.project, **frame.params()})

    def has_data(self, conn: Connection, scope: Scope, frame: TimeFrame = NOW) -> bool:
        return held(conn, {self.name: self.data_check(scope, frame)})[self.name]

    def search(self, engine: Engine, q: DomainQuery) -> DomainAnswer:
        settings = get_settings()
        scope = _scope(q.scope)
        statuses = SECTION_LEG.statuses(q.include_history)
        # Paths are gated per item after the query: ask for more when some may be dropped.
        n = pool_size(settings, q, gated_per_item=True)
        with read_only(engine) as conn:
            if not q.held and not self.has_data(conn, scope, q.frame) and not q.include_history:
                return DomainAnswer([], "no data")
            gate, gate_params = _gate_sql(q.policy)
            legs = gather(conn, scope, SECTION_LEG.framed(q.frame), tokenize(q.query), q.query_vector, n, settings,
                          statuses, gate, {**gate_params, **q.frame.params()})
            ids = legs.ids
            if not ids:
                return DomainAnswer([], "no match")
            rows = {r.section_id: r for r in conn.execute(_rows(q.frame), {"tenant": scope.tenant, "ids": ids,
                                                                           **q.frame.params()})}
        allowed = [i for i in ids if i in rows and not excluded(q.policy, rows[i])]
        grade = scale(KNOWLEDGE, settings.embedding.embedding_model)
        hits = [DomainHit(content=row.text, score=f.score, handle=handle_of(row), legs=f.legs, relevance=rel,
                          fields={"title": row.title, "path": row.path, "heading_path": row.heading_path,
                                  "tags": list(row.tags or []), "version": row.version, "status": row.status},
                          explanation=why)
                for f in scored(legs, allowed, SECTION_LEG, lambda i: rows[i].status, settings)
                for row in (rows[f.id],)
                for rel, why in (graded(f, grade, q.query, row.text, not has_body(row.text)),)]
        # By relevance first: it knows what the fused score does not, that a title alone answers nothing.
        hits.sort(key=lambda h: (-h.relevance, -h.score, h.handle["path"], h.handle["heading_path"]))
        return answer(hits, q.k, len(ids), len(allowed))

    def fetch(self, conn: Connection, scope: Scope, handle: dict[str, Any], policy: PrivacyPolicy,
              frame: TimeFrame = NOW) -> Any:
        """{"section": the exact section the handle names (any status), "current": the section now (or as of the
        frame) at its (document, heading path) or None, "current_differs": whether that text differs}; None when
        unknown (as of the frame: not put yet) or excluded."""
        sid = handle_section(scope.tenant, handle)
        if sid is None:
            return None
        row = conn.execute(_rows(frame), {"tenant": scope.tenant, "ids": [sid], **frame.params()}).first()
        if row is None or excluded(policy, row):
            return None
        current = conn.execute(_current(frame), {"tenant": scope.tenant, "heading_path": row.heading_path,
                                                 "document_id": document_stream(row.project, row.path),
                                                 "live": list(LIVE), **frame.params()}).first()
        if current is not None and excluded(policy, current):
            current = None
        return {"section": section_out(row), "current": section_out(current) if current is not None else None,
                "current_differs": current is None or current.content_hash != row.content_hash}


@dataclass(frozen=True)
class Drilled:
    found: dict[str, Any]  # KnowledgeDomain.fetch's answer
    drill_id: uuid.UUID
    position: int


def drill(engine: Engine, tenant: str, path: str, heading_path: str, project: str | None, policy: PrivacyPolicy,
          metadata: dict[str, Any], content_hash: str | None = None, version: int | None = None,
          recall_id: uuid.UUID | None = None, frame: TimeFrame = NOW) -> Drilled:
    """`frame` with as_of: the section and the document as they stood at that position (a section put later is
    unknown, 404)."""
    project = project or None
    unknown = f"no section {heading_path!r} in {path!r}"
    with engine.connect() as conn:
        if recall_id is not None and first_of_type(conn, tenant, recall_stream(recall_id), RecallServed) is None:
            raise NotFound(f"no recall {recall_id}")
        if content_hash is None:
            # No handle: the section at that version of the document (its current one by default), from the log.
            doc = document_at(conn, tenant, path, project, version, frame.as_of)
            if document_excluded(policy, path, doc.tags, project):
                raise NotFound(unknown_document(path, version))  # as document_at answers an unknown one
            content_hash = next((s.content_hash for s in split_sections(doc.content)
                                 if s.heading_path == heading_path), None)
            if content_hash is None:
                raise NotFound(unknown)
        handle = {"path": path, "heading_path": heading_path, "content_hash": content_hash, "project": project}
        found = KnowledgeDomain().fetch(conn, Scope(tenant, project=project), handle, policy, frame)
    if found is None:
        raise NotFound(unknown if version is None else f"{unknown} at version {version}")
    handle["version"] = found["section"]["version"]
    drill_id, position = append_drilled(engine, tenant, KNOWLEDGE, handle, recall_id, metadata)
    return Drilled(found, drill_id, position)


MAX_LISTED = 10_000
_LIST = text("""
SELECT path, project, version, content_hash, title, tags, status, sections, updated_at FROM knowledge_documents
WHERE tenant = :tenant AND project IS NOT DISTINCT FROM :project
  AND (CAST(:prefix AS text) IS NULL OR starts_with(path, :prefix)) AND path > :after
ORDER BY path LIMIT :limit
""")


def list_documents(conn: Connection, tenant: str, project: str | None, policy: PrivacyPolicy,
                   prefix: str | None = None, after: str = "",
                   limit: int = 1000) -> tuple[list[dict[str, Any]], str | None]:
    """The project's documents (none: those without a project) by path, after `after`, none the policy hides; and
    the path to page on from (None: no more)."""
    def read(cursor: str, n: int) -> list[Any]:
        return list(conn.execute(_LIST, {"tenant": tenant, "project": project or None, "prefix": prefix,
                                         "after": cursor, "limit": n}).all())

    rows, next_after = visible_page(read, lambda r: r.path,
                                    lambda r: not document_excluded(policy, r.path, r.tags or (), r.project),
                                    after, min(limit, MAX_LISTED))
    return [dict(r._mapping) | {"tags": list(r.tags or [])} for r in rows], next_after


__all__ = ["Drilled", "KNOWLEDGE", "KnowledgeDomain", "MAX_LISTED", "drill", "handle_of", "list_documents",
           "section_out"]
