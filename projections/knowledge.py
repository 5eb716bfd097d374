"""The knowledge library's read models: documents, their sections, and BM25 postings over sections.

Only applies events; decides nothing. A section is one row per (document, heading path, content): a re-put
inserts (and indexes) only the sections whose text changed; one it no longer holds becomes 'replaced'; one it
holds again (same text) is active again, still indexed. Postings are kept for every section ever put (recall
filters by status, as memories' keyword read model does), so history can be searched.

| event                | effect                                                                                  |
| -------------------- | --------------------------------------------------------------------------------------- |
| DocumentPut          | the document row (version = the event's stream version); new sections inserted and     |
|                      | indexed; unchanged ones get the new version, ordinal, title, tags; dropped ones replaced |
| DocumentRetired      | the document and its live sections 'retired'                                            |
| SectionStatusChanged | a section still in from_status moves to to_status (the decay job's decision); back to  |
|                      | active: last_reactivated_at = its clock (a reactivation counts as a reference)          |
| RecallServed         | each "knowledge" result's section: ref_count + 1, last_referenced_at = the event's time |
| ResultDrilled        | its "knowledge" section likewise                                                        |

After each of the first three, the document's (or the section's) changed sections get a recorded-time version
at the event's position (knowledge_section_versions: readmodels/unit_versions.py), what `as_of` reads.

Every time comes from the event (recorded_at, or a decision's clock), so a rebuild gives the same rows.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence

import structlog
from sqlalchemy import Connection, text

from domain.events import (
    DocumentPut,
    DocumentRetired,
    RecallServed,
    RecordedEvent,
    ResultDrilled,
    SectionStatusChanged,
    document_stream,
    section_id,
)
from domain.knowledge.handles import LIVE
from domain.knowledge.sections import split_sections
from domain.text import term_frequencies
from projections.base import OneByOne, apply_in_order, types_of
from projections.postings import PostingsTables, index
from projections.references import ReferencedUnits
from projections.unit_status import status_changed
from readmodels.item_domains import SECTIONS

log = structlog.get_logger(__name__)

SECTION_POSTINGS = PostingsTables(SECTIONS.postings)
SECTION_REFERENCES = ReferencedUnits(SECTIONS)

_DOCUMENT = text("""
INSERT INTO knowledge_documents (tenant, document_id, project, path, version, content_hash, title, tags, metadata,
                                 status, sections, updated_at, position)
VALUES (:tenant, :document_id, :project, :path, :version, :content_hash, :title, :tags, CAST(:metadata AS jsonb),
        'active', :sections, :at, :position)
ON CONFLICT (tenant, document_id) DO UPDATE SET
    version = EXCLUDED.version, content_hash = EXCLUDED.content_hash, title = EXCLUDED.title, tags = EXCLUDED.tags,
    metadata = EXCLUDED.metadata, status = 'active', sections = EXCLUDED.sections, updated_at = EXCLUDED.updated_at,
    position = EXCLUDED.position
""")
_KNOWN = text("""
SELECT section_id, status FROM knowledge_sections
WHERE tenant = :tenant AND document_id = :document_id AND (section_id = ANY(:ids) OR status = ANY(:live))
""")
_INSERT = text("""
INSERT INTO knowledge_sections (tenant, section_id, document_id, project, path, heading_path, ordinal, content_hash,
                                first_version, version, text, length, title, tags, status, created_at,
                                status_changed_at)
SELECT :tenant, b.section_id, :document_id, :project, :path, b.heading_path, b.ordinal, b.content_hash, :version,
       :version, b.text, b.length, :title, :tags, 'active', :at, :at
FROM unnest(CAST(:ids AS uuid[]), CAST(:headings AS text[]), CAST(:ordinals AS int[]), CAST(:hashes AS text[]),
            CAST(:texts AS text[]), CAST(:lengths AS int[])) AS b(section_id, heading_path, ordinal, content_hash,
                                                                  text, length)
""")
# Held again by the new version: a replaced or retired one is active again; a live one keeps its lifecycle status.
_KEEP = text("""
UPDATE knowledge_sections s SET version = :version, ordinal = b.ordinal, title = :title, tags = :tags,
    status = CASE WHEN s.status = ANY(:live) THEN s.status ELSE 'active' END,
    status_changed_at = CASE WHEN s.status = ANY(:live) THEN s.status_changed_at ELSE :at END
FROM unnest(CAST(:ids AS uuid[]), CAST(:ordinals AS int[])) AS b(section_id, ordinal)
WHERE s.tenant = :tenant AND s.section_id = b.section_id
""")
_END = text("""
UPDATE knowledge_sections SET status = :status, status_changed_at = :at
WHERE tenant = :tenant AND section_id = ANY(CAST(:ids AS uuid[]))
""")
_RETIRE_DOCUMENT = text("""
UPDATE knowledge_documents SET status = 'retired', updated_at = :at, position = :position
WHERE tenant = :tenant AND document_id = :document_id
""")
_RETIRE_SECTIONS = text("""
UPDATE knowledge_sections SET status = 'retired', status_changed_at = :at
WHERE tenant = :tenant AND document_id = :document_id AND status = ANY(:live)
""")


def _on_own_stream(event: RecordedEvent, project: str | None, path: str) -> bool:
    """The write path puts a document's events on its own stream; one elsewhere (appended before that rule) would
    make its versions meaningless, so every projector run, live and rebuilt, ignores it alike."""
    if event.stream_id == document_stream(project, path):
        return True
    log.warning("knowledge.event_off_stream", position=event.position, stream_id=event.stream_id)
    return False


def _put(conn: Connection, event: RecordedEvent, p: DocumentPut) -> None:
    if not _on_own_stream(event, p.project, p.path):
        return
    tenant, at, version = event.tenant, event.recorded_at, event.stream_version
    sections = split_sections(p.content)
    ids = [section_id(tenant, p.project, p.path, s.heading_path, s.content_hash) for s in sections]
    doc = {"tenant": tenant, "document_id": event.stream_id, "project": p.project, "path": p.path,
           "version": version, "title": p.title, "tags": list(p.tags), "at": at}
    known: dict[uuid.UUID, str] = dict(conn.execute(_KNOWN, {"tenant": tenant, "document_id": event.stream_id,
                                                             "ids": ids, "live": list(LIVE)}).all())
    new = [(sid, s) for sid, s in zip(ids, sections, strict=True) if sid not in known]
    kept = [(sid, s) for sid, s in zip(ids, sections, strict=True) if sid in known]
    dropped = sorted(str(sid) for sid, status in known.items() if status in LIVE and sid not in set(ids))
    if dropped:
        conn.execute(_END, {"tenant": tenant, "ids": dropped, "status": "replaced", "at": at})
    if kept:
        conn.execute(_KEEP, {**doc, "ids": [sid for sid, _ in kept], "ordinals": [s.ordinal for _, s in kept],
                             "live": list(LIVE)})
    if new:
        tfs = [term_frequencies(s.text) for _, s in new]
        conn.execute(_INSERT, {**doc, "ids": [sid for sid, _ in new], "headings": [s.heading_path for _, s in new],
                               "ordinals": [s.ordinal for _, s in new], "hashes": [s.content_hash for _, s in new],
                               "texts": [s.text for _, s in new], "lengths": [sum(t.values()) for t in tfs]})
        index(conn, SECTION_POSTINGS, tenant, [(sid, t) for (sid, _), t in zip(new, tfs, strict=True)])
    conn.execute(_DOCUMENT, {**doc, "content_hash": p.content_hash, "metadata": json.dumps(p.metadata),
                             "sections": len(sections), "position": event.position})
    _snapshot_document(conn, event)


def _snapshot_document(conn: Connection, event: RecordedEvent) -> None:
    SECTIONS.versions.snapshot(conn, event.tenant, event.position, "u.document_id = :document_id",
                              {"document_id": event.stream_id})


def _retired(conn: Connection, event: RecordedEvent, p: DocumentRetired) -> None:
    if not _on_own_stream(event, p.project, p.path):
        return
    ids = {"tenant": event.tenant, "document_id": event.stream_id, "at": event.recorded_at}
    conn.execute(_RETIRE_DOCUMENT, {**ids, "position": event.position})
    conn.execute(_RETIRE_SECTIONS, {**ids, "live": list(LIVE)})
    _snapshot_document(conn, event)


_ONE_BY_ONE: OneByOne = {DocumentPut: _put, DocumentRetired: _retired, SectionStatusChanged: status_changed(SECTIONS),
                         RecallServed: SECTION_REFERENCES.served, ResultDrilled: SECTION_REFERENCES.drilled}


class KnowledgeProjector:
    name = SECTIONS.projection
    tables = ("knowledge_documents", "knowledge_sections", *SECTIONS.postings.tables, "knowledge_section_versions")
    handlers = _ONE_BY_ONE
    types = types_of(handlers)

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        apply_in_order(conn, events, _ONE_BY_ONE)
