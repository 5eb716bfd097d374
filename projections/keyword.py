"""The keyword read model: postings, document lengths and corpus statistics for Okapi BM25."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from sqlalchemy import Connection, text

from domain.events import MemoryRecorded, RecordedEvent
from domain.text import term_frequencies

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


class KeywordProjector:
    name = "keyword"
    tables = ("keyword_docs", "keyword_postings", "keyword_terms", "keyword_stats")
    types = ("MemoryRecorded",)

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        docs: dict[str, list] = {k: [] for k in ("tenants", "ids", "lengths", "agents", "projects", "sessions",
                                                 "kinds")}
        postings: dict[str, list] = {k: [] for k in ("tenants", "terms", "ids", "tfs", "lengths")}
        df: Counter[tuple[str, str]] = Counter()
        stats: dict[str, list[int]] = {}
        for event in events:
            m = event.payload()
            assert isinstance(m, MemoryRecorded)
            tfs = term_frequencies(m.content)
            length = sum(tfs.values())
            for key, value in (("tenants", event.tenant), ("ids", m.memory_id), ("lengths", length),
                               ("agents", m.agent_id), ("projects", m.project), ("sessions", m.session_id),
                               ("kinds", m.kind)):
                docs[key].append(value)
            for term, tf in sorted(tfs.items()):
                for key, value in (("tenants", event.tenant), ("terms", term), ("ids", m.memory_id),
                                   ("tfs", tf), ("lengths", length)):
                    postings[key].append(value)
                df[(event.tenant, term)] += 1
            tenant_stats = stats.setdefault(event.tenant, [0, 0])
            tenant_stats[0] += 1
            tenant_stats[1] += length
        if not docs["ids"]:
            return
        conn.execute(_DOCS, docs)
        if postings["ids"]:
            conn.execute(_POSTINGS, postings)
            keys = sorted(df)
            conn.execute(_TERMS, {"tenants": [t for t, _ in keys], "terms": [w for _, w in keys],
                                  "dfs": [df[k] for k in keys]})
        for tenant, (n, total) in sorted(stats.items()):
            conn.execute(_STATS, {"tenant": tenant, "n": n, "total": total})
