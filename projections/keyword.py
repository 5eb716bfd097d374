"""The keyword read model: postings, document lengths and corpus statistics for Okapi BM25.

Every recorded memory keeps its document (recall filters by status through `memories`). A memory whose
content changes (MemoryReinforced's or MemoriesMerged's merged content) is re-indexed: its old postings are
removed and their terms' df decremented (a term no document holds any more is deleted), the tenant's
total_length adjusted by the change in length (n_docs is unchanged: still one document), then the new content
indexed. Events are applied in log order, so the result does not depend on where batches are cut.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, text

from domain.events import EventSchema, MemoriesMerged, MemoryRecorded, MemoryReinforced, RecordedEvent
from domain.text import term_frequencies
from projections.base import OneByOne, apply_in_order, types_of

_DOCS = text("""
INSERT INTO keyword_docs (tenant, memory_id, length, agent_id, project, session_id, kind)
SELECT * FROM unnest(CAST(:tenants AS text[]), CAST(:ids AS uuid[]), CAST(:lengths AS int[]),
                     CAST(:agents AS text[]), CAST(:projects AS text[]), CAST(:sessions AS text[]),
                     CAST(:kinds AS text[]))
""")
_POSTINGS = text("""
INSERT INTO keyword_postings (tenant, term, memory_id, tf, length)
SELECT * FROM unnest(CAST(:tenants AS text[]), CAST(:terms AS text[]), CAST(:ids AS uuid[]),
                     CAST(:tfs AS int[]), CAST(:lengths AS int[]))
""")
_TERMS = text("""
INSERT INTO keyword_terms (tenant, term, df)
SELECT * FROM unnest(CAST(:tenants AS text[]), CAST(:terms AS text[]), CAST(:dfs AS int[]))
ON CONFLICT (tenant, term) DO UPDATE SET df = keyword_terms.df + EXCLUDED.df
""")
_STATS = text("""
INSERT INTO keyword_stats (tenant, n_docs, total_length) VALUES (:tenant, :n, :total)
ON CONFLICT (tenant) DO UPDATE SET n_docs = keyword_stats.n_docs + EXCLUDED.n_docs,
                                   total_length = keyword_stats.total_length + EXCLUDED.total_length
""")


# A memory's postings by the primary key (tenant, memory_id, term): one index range (migration 0012).
_OLD_POSTINGS = text("SELECT term, tf FROM keyword_postings WHERE tenant = :tenant AND memory_id = :memory_id")
_OLD_LENGTH = text("SELECT length FROM keyword_docs WHERE tenant = :tenant AND memory_id = :memory_id")
_DROP_POSTINGS = text("DELETE FROM keyword_postings WHERE tenant = :tenant AND memory_id = :memory_id")
_DECREMENT = text("UPDATE keyword_terms SET df = df - 1 WHERE tenant = :tenant AND term = ANY(:terms)")
_DROP_TERMS = text("DELETE FROM keyword_terms WHERE tenant = :tenant AND term = ANY(:terms) AND df <= 0")
_RELENGTH = text("UPDATE keyword_docs SET length = :length WHERE tenant = :tenant AND memory_id = :memory_id")
_RETOTAL = text("UPDATE keyword_stats SET total_length = total_length + :delta WHERE tenant = :tenant")


def reindex(conn: Connection, tenant: str, memory_id: object, content: str) -> bool:
    """Replace a document's postings with those of `content`. False when unknown or unchanged."""
    old_length = conn.execute(_OLD_LENGTH, {"tenant": tenant, "memory_id": memory_id}).scalar_one_or_none()
    if old_length is None:
        return False
    old = dict(conn.execute(_OLD_POSTINGS, {"tenant": tenant, "memory_id": memory_id}).all())
    tfs = term_frequencies(content)
    if old == dict(tfs):
        return False
    length = sum(tfs.values())
    ids = {"tenant": tenant, "memory_id": memory_id}
    conn.execute(_DROP_POSTINGS, ids)
    if old:
        terms = sorted(old)
        conn.execute(_DECREMENT, {"tenant": tenant, "terms": terms})
        conn.execute(_DROP_TERMS, {"tenant": tenant, "terms": terms})
    if tfs:
        terms = sorted(tfs)
        conn.execute(_POSTINGS, {"tenants": [tenant] * len(terms), "terms": terms, "ids": [memory_id] * len(terms),
                                 "tfs": [tfs[t] for t in terms], "lengths": [length] * len(terms)})
        conn.execute(_TERMS, {"tenants": [tenant] * len(terms), "terms": terms, "dfs": [1] * len(terms)})
    conn.execute(_RELENGTH, {**ids, "length": length})
    conn.execute(_RETOTAL, {"tenant": tenant, "delta": length - old_length})
    return True


class _Run:
    """Consecutive MemoryRecorded events, indexed in bulk (one statement per table)."""

    def __init__(self) -> None:
        self.events: list[tuple[RecordedEvent, MemoryRecorded]] = []

    def add(self, conn: Connection, event: RecordedEvent, p: MemoryRecorded) -> None:
        self.events.append((event, p))

    def flush(self, conn: Connection) -> None:
        docs: dict[str, list] = {k: [] for k in ("tenants", "ids", "lengths", "agents", "projects", "sessions",
                                                 "kinds")}
        rows: list[tuple[str, str, Any, int, int]] = []  # postings: (tenant, term, memory_id, tf, length)
        df: Counter[tuple[str, str]] = Counter()
        stats: dict[str, list[int]] = {}
        for event, m in self.events:
            tfs = term_frequencies(m.content)
            length = sum(tfs.values())
            for key, value in (("tenants", event.tenant), ("ids", m.memory_id), ("lengths", length),
                               ("agents", m.agent_id), ("projects", m.project), ("sessions", m.session_id),
                               ("kinds", m.kind)):
                docs[key].append(value)
            for term, tf in tfs.items():
                rows.append((event.tenant, term, m.memory_id, tf, length))
                df[(event.tenant, term)] += 1
            tenant_stats = stats.setdefault(event.tenant, [0, 0])
            tenant_stats[0] += 1
            tenant_stats[1] += length
        self.events = []
        if not docs["ids"]:
            return
        conn.execute(_DOCS, docs)
        if rows:
            # In primary-key order: each term's new entries go into its part of the index one after another,
            # instead of jumping across the whole index for every document (memory ids are random).
            rows.sort(key=lambda r: (r[0], r[1], str(r[2])))
            tenants, terms, ids, tfs, lengths = (list(column) for column in zip(*rows, strict=True))
            conn.execute(_POSTINGS, {"tenants": tenants, "terms": terms, "ids": ids, "tfs": tfs, "lengths": lengths})
            keys = sorted(df)
            conn.execute(_TERMS, {"tenants": [t for t, _ in keys], "terms": [w for _, w in keys],
                                  "dfs": [df[k] for k in keys]})
        for tenant, (n, total) in sorted(stats.items()):
            conn.execute(_STATS, {"tenant": tenant, "n": n, "total": total})


def _content_changed(conn: Connection, event: RecordedEvent, p: MemoryReinforced | MemoriesMerged) -> None:
    reindex(conn, event.tenant, p.memory_id, p.merged_content)


# Event class → how it is applied: into the current bulk run, or on its own (after the run is written).
_IN_RUN: dict[type[EventSchema], Callable[[_Run, Connection, RecordedEvent, Any], None]] = {MemoryRecorded: _Run.add}
_ONE_BY_ONE: OneByOne = {
    MemoryReinforced: _content_changed, MemoriesMerged: _content_changed}


class KeywordProjector:
    name = "keyword"
    tables = ("keyword_docs", "keyword_postings", "keyword_terms", "keyword_stats")
    handlers = {**_IN_RUN, **_ONE_BY_ONE}
    types = types_of(handlers)

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        apply_in_order(conn, events, _ONE_BY_ONE, _IN_RUN, _Run())
