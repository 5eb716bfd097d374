"""Knowledge sections' vectors (knowledge_section_vectors), embedded lazily: a section gets its vector the first
time the hit-log shows it was used, never by a sweep over the library (projections/lazy_vectors.py, the projector
knowledge and transcripts share).

| event         | effect: sections without a vector of the configured model get one                     |
| ------------- | ------------------------------------------------------------------------------------- |
| RecallServed  | each "knowledge" result's section                                                     |
| ResultDrilled | its "knowledge" section                                                               |
| DocumentPut   | only with ENGRAMLOG_KNOWLEDGE_EMBEDDING=eager: every section of the put version       |

A handle names a section by (project, path, heading path, content hash) and a document version. Its text comes
from the log, never from another projection's tables: the DocumentPut at that version on the document's stream,
split by domain/knowledge/sections.py, the section with that heading path and content hash. A handle naming no
section of that version is skipped (logged), by every run alike. So which sections have vectors follows from the
events alone (with the same mode and model), and a rebuild reproduces the set exactly; embeddings go through the
embedding cache (tenant, model, content hash), so a rebuild computes nothing already computed.
"""

from __future__ import annotations

import uuid
from typing import Any

import structlog
from sqlalchemy import Connection

from domain.events import DocumentPut, RecordedEvent, document_stream, section_id
from domain.knowledge.handles import handle_section
from domain.knowledge.sections import Section, split_sections
from eventstore.stream import stream_event
from infra.settings import get_settings
from projections.lazy_vectors import HIT_LOG, LazySurface, LazyVectorsProjector, Wanted
from readmodels.item_domains import SECTIONS as SECTION_ITEMS

log = structlog.get_logger(__name__)


def _texts_from_log(conn: Connection, tenant: str, handles: dict[uuid.UUID, dict[str, Any]]) -> dict[uuid.UUID, str]:
    """Each handle's section text, from its document's DocumentPut at the handle's version (each version read and
    split once)."""
    versions: dict[tuple[str, int], list[Section] | None] = {}
    out: dict[uuid.UUID, str] = {}
    for sid, h in handles.items():
        key = (document_stream(h.get("project"), h["path"]), h["version"])
        if key not in versions:
            event = stream_event(conn, tenant, *key)
            put = event.payload() if event else None
            versions[key] = split_sections(put.content) if isinstance(put, DocumentPut) else None
        section = next((s for s in versions[key] or () if s.heading_path == h["heading_path"]
                        and s.content_hash == h["content_hash"]), None)
        if section is None:
            log.warning("section_vectors.section_not_in_log", tenant=tenant, path=h["path"],
                        heading_path=h["heading_path"], version=h["version"])
            continue
        out[sid] = section.text
    return out


def _put(wanted: Wanted, conn: Connection, event: RecordedEvent, p: DocumentPut) -> None:
    if get_settings().embedding.knowledge_embedding != "eager" or event.stream_id != document_stream(p.project, p.path):
        return  # lazy; or off its stream, which the knowledge projection ignores too
    for s in split_sections(p.content):
        wanted.add_text(event.tenant, section_id(event.tenant, p.project, p.path, s.heading_path, s.content_hash),
                        s.text)


SECTIONS = LazySurface("section_vectors", SECTION_ITEMS, handle_section, _texts_from_log)


class SectionVectorsProjector(LazyVectorsProjector):
    surface = SECTIONS
    handlers = {DocumentPut: _put, **HIT_LOG}


__all__ = ["SECTIONS", "SectionVectorsProjector"]
