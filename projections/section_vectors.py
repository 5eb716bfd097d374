"""Knowledge sections' vectors (knowledge_section_vectors), embedded lazily: a section gets its vector the first
time the hit-log shows it was used, never by a sweep over the library.

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
from collections.abc import Sequence
from typing import Any

import structlog
from sqlalchemy import Connection, text

from domain.events import DocumentPut, RecallServed, RecordedEvent, ResultDrilled, document_stream, section_id
from domain.knowledge.handles import handle_section
from domain.knowledge.sections import Section, split_sections
from eventstore.stream import stream_event
from infra.embedding import embed_cached, get_embedder
from infra.settings import get_settings
from projections.base import apply_in_order, types_of

log = structlog.get_logger(__name__)
KNOWLEDGE = "knowledge"  # the domain's name in hit-log results
EMBED_CHUNK = 256  # texts per embed_cached call: one cache lookup and a few forward passes each

_HAVE = text("""
SELECT section_id FROM knowledge_section_vectors
WHERE tenant = :tenant AND model = :model AND section_id = ANY(CAST(:ids AS uuid[]))
""")
_INSERT = text("""
INSERT INTO knowledge_section_vectors (tenant, section_id, model, embedding)
SELECT :tenant, b.i, :model, CAST(b.e AS vector)
FROM unnest(CAST(:ids AS uuid[]), CAST(:embeddings AS text[])) AS b(i, e)
ON CONFLICT DO NOTHING
""")


class _Wanted:
    """Sections asked for by consecutive events, embedded and inserted in bulk (the set does not depend on the
    order or the batching of the events that ask)."""

    def __init__(self) -> None:
        self.texts: dict[tuple[str, uuid.UUID], str] = {}  # known text (eager puts)
        self.handles: dict[tuple[str, uuid.UUID], dict[str, Any]] = {}  # text to be read from the log

    def add_put(self, conn: Connection, event: RecordedEvent, p: DocumentPut) -> None:
        if get_settings().knowledge_embedding != "eager" or event.stream_id != document_stream(p.project, p.path):
            return  # lazy; or off its stream, which the knowledge projection ignores too
        for s in split_sections(p.content):
            self.texts[(event.tenant, section_id(event.tenant, p.project, p.path, s.heading_path,
                                                 s.content_hash))] = s.text

    def add_served(self, conn: Connection, event: RecordedEvent, p: RecallServed) -> None:
        for r in p.results:
            if r.domain == KNOWLEDGE:
                self._add_handle(event.tenant, r.handle)

    def add_drilled(self, conn: Connection, event: RecordedEvent, p: ResultDrilled) -> None:
        if p.domain == KNOWLEDGE:
            self._add_handle(event.tenant, p.handle)

    def _add_handle(self, tenant: str, handle: dict[str, Any] | None) -> None:
        sid = handle_section(tenant, handle)
        if sid is None or not isinstance(handle.get("version"), int):  # type: ignore[union-attr]
            log.warning("section_vectors.bad_handle", tenant=tenant, handle=str(handle)[:300])
            return
        self.handles.setdefault((tenant, sid), handle)  # type: ignore[arg-type]

    def flush(self, conn: Connection) -> None:
        texts, handles = self.texts, self.handles
        self.texts, self.handles = {}, {}
        if not texts and not handles:
            return
        model = get_embedder(get_settings().embedding_model).model
        by_tenant: dict[str, set[uuid.UUID]] = {}
        for tenant, sid in [*texts, *handles]:
            by_tenant.setdefault(tenant, set()).add(sid)
        for tenant in sorted(by_tenant):
            ids = sorted(by_tenant[tenant], key=str)
            have = set(conn.execute(_HAVE, {"tenant": tenant, "model": model, "ids": ids}).scalars())
            todo = [sid for sid in ids if sid not in have]
            missing = [sid for sid in todo if (tenant, sid) not in texts]
            texts.update(_texts_from_log(conn, tenant, {sid: handles[(tenant, sid)] for sid in missing}))
            _embed(conn, tenant, model, [(sid, texts[(tenant, sid)]) for sid in todo if (tenant, sid) in texts])


def _texts_from_log(conn: Connection, tenant: str,
                    handles: dict[uuid.UUID, dict[str, Any]]) -> dict[tuple[str, uuid.UUID], str]:
    """Each handle's section text, from its document's DocumentPut at the handle's version (each version read and
    split once)."""
    versions: dict[tuple[str, int], list[Section] | None] = {}
    out: dict[tuple[str, uuid.UUID], str] = {}
    for sid, h in handles.items():
        key = (document_stream(h.get("project"), h["path"]), h["version"])
        if key not in versions:
            event = stream_event(conn, tenant, *key)
            versions[key] = split_sections(event.payload().content) if event and event.is_a(DocumentPut) else None
        section = next((s for s in versions[key] or () if s.heading_path == h["heading_path"]
                        and s.content_hash == h["content_hash"]), None)
        if section is None:
            log.warning("section_vectors.section_not_in_log", tenant=tenant, path=h["path"],
                        heading_path=h["heading_path"], version=h["version"])
            continue
        out[(tenant, sid)] = section.text
    return out


def _embed(conn: Connection, tenant: str, model: str, sections: list[tuple[uuid.UUID, str]]) -> None:
    embedder = get_embedder(get_settings().embedding_model)
    for start in range(0, len(sections), EMBED_CHUNK):
        chunk = sections[start:start + EMBED_CHUNK]
        embeddings = embed_cached(conn, embedder, tenant, [t for _, t in chunk])
        conn.execute(_INSERT, {"tenant": tenant, "model": model, "ids": [sid for sid, _ in chunk],
                               "embeddings": embeddings})


_IN_RUN = {DocumentPut: _Wanted.add_put, RecallServed: _Wanted.add_served, ResultDrilled: _Wanted.add_drilled}


class SectionVectorsProjector:
    name = "section_vectors"
    tables = ("knowledge_section_vectors",)
    handlers = _IN_RUN
    types = types_of(handlers)

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        apply_in_order(conn, events, {}, _IN_RUN, _Wanted())
