"""The keyword read model: postings, document lengths and corpus statistics for Okapi BM25.

Every recorded memory keeps its document (recall filters by status through `memories`). A memory whose
content changes (MemoryReinforced's or MemoriesMerged's merged content) is re-indexed: its old postings are
removed and their terms' df decremented (a term no document holds any more is deleted), the tenant's
total_length adjusted by the change in length (n_docs is unchanged: still one document), then the new content
indexed. Events are applied in log order, so the result does not depend on where batches are cut. Postings,
df, statistics and the postings packed per term are written by projections/postings.py, the writer every BM25 read
model shares.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, text

from domain.events import EventSchema, MemoriesMerged, MemoryRecorded, MemoryReinforced, RecordedEvent
from domain.text import term_frequencies
from projections.base import OneByOne, apply_in_order, types_of
from projections.postings import PostingsTables, index, unindex
from readmodels.memories import MEMORY_POSTINGS as MEMORY_POSTING_TABLES

_DOCS = text("""
INSERT INTO keyword_docs (tenant, memory_id, length, agent_id, project, session_id, kind)
SELECT * FROM unnest(CAST(:tenants AS text[]), CAST(:ids AS uuid[]), CAST(:lengths AS int[]),
                     CAST(:agents AS text[]), CAST(:projects AS text[]), CAST(:sessions AS text[]),
                     CAST(:kinds AS text[]))
""")


# A memory's postings by the primary key (tenant, memory_id, term): one index range (migration 0012).
_OLD_POSTINGS = text("SELECT term, tf FROM keyword_postings WHERE tenant = :tenant AND memory_id = :memory_id")
_OLD_LENGTH = text("SELECT length FROM keyword_docs WHERE tenant = :tenant AND memory_id = :memory_id")
_RELENGTH = text("UPDATE keyword_docs SET length = :length WHERE tenant = :tenant AND memory_id = :memory_id")
MEMORY_POSTINGS = PostingsTables(MEMORY_POSTING_TABLES)


def reindex(conn: Connection, tenant: str, memory_id: object, content: str) -> bool:
    """Replace a document's postings with those of `content` (still one document: n_docs unchanged, total_length by
    the change in length). False when unknown or unchanged."""
    old_length = conn.execute(_OLD_LENGTH, {"tenant": tenant, "memory_id": memory_id}).scalar_one_or_none()
    if old_length is None:
        return False
    old: dict[str, int] = dict(conn.execute(_OLD_POSTINGS, {"tenant": tenant, "memory_id": memory_id}).all())
    tfs = term_frequencies(content)
    if old == dict(tfs):
        return False
    unindex(conn, MEMORY_POSTINGS, tenant, [memory_id], old_length)
    index(conn, MEMORY_POSTINGS, tenant, [(memory_id, tfs)])
    conn.execute(_RELENGTH, {"tenant": tenant, "memory_id": memory_id, "length": sum(tfs.values())})
    return True


class _Run:
    """Consecutive MemoryRecorded events, indexed in bulk (one statement per table and tenant)."""

    def __init__(self) -> None:
        self.events: list[tuple[RecordedEvent, MemoryRecorded]] = []

    def add(self, conn: Connection, event: RecordedEvent, p: MemoryRecorded) -> None:
        self.events.append((event, p))

    def flush(self, conn: Connection) -> None:
        docs: dict[str, list] = {k: [] for k in ("tenants", "ids", "lengths", "agents", "projects", "sessions",
                                                 "kinds")}
        by_tenant: dict[str, list[tuple[Any, Counter[str]]]] = {}
        for event, m in self.events:
            tfs = term_frequencies(m.content)
            for key, value in (("tenants", event.tenant), ("ids", m.memory_id), ("lengths", sum(tfs.values())),
                               ("agents", m.agent_id), ("projects", m.project), ("sessions", m.session_id),
                               ("kinds", m.kind)):
                docs[key].append(value)
            by_tenant.setdefault(event.tenant, []).append((m.memory_id, tfs))
        self.events = []
        if not docs["ids"]:
            return
        conn.execute(_DOCS, docs)
        for tenant, tenant_docs in sorted(by_tenant.items()):
            index(conn, MEMORY_POSTINGS, tenant, tenant_docs)


def _content_changed(conn: Connection, event: RecordedEvent, p: MemoryReinforced | MemoriesMerged) -> None:
    reindex(conn, event.tenant, p.memory_id, p.merged_content)


# Event class → how it is applied: into the current bulk run, or on its own (after the run is written).
_IN_RUN: dict[type[EventSchema], Callable[[_Run, Connection, RecordedEvent, Any], None]] = {MemoryRecorded: _Run.add}
_ONE_BY_ONE: OneByOne = {
    MemoryReinforced: _content_changed, MemoriesMerged: _content_changed}


class KeywordProjector:
    name = "keyword"
    tables = ("keyword_docs", *MEMORY_POSTING_TABLES.tables)
    handlers = {**_IN_RUN, **_ONE_BY_ONE}
    types = types_of(handlers)

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        apply_in_order(conn, events, _ONE_BY_ONE, _IN_RUN, _Run())
