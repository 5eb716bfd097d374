"""The one BM25 postings writer: a document's postings, its terms' document frequencies and the tenant's corpus
statistics, added and removed, for every read model recall/keyword.py scores (memories, knowledge sections,
transcript chunks, ...).

A domain's postings are three tables, named once (readmodels/postings.py `Postings`, each domain's in its
declaration); `PostingsTables` holds the statements over them: postings (tenant, term, <id>, tf, length), terms
(tenant, term, df) and stats (tenant, n_docs, total_length). `index` adds documents (each document's term
frequencies, as domain/text.py term_frequencies counts them); `unindex` removes documents' postings, decrements
their terms' df (deleting a term no document holds any more) and takes them out of the statistics. Both keep the
postings packed per term (projections/term_blocks.py) in step, for a domain that keeps them. Tables are named
unqualified, so a rebuild's search_path redirects them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from sqlalchemy import Connection, TextClause, text

from projections import term_blocks
from readmodels.postings import Postings


@dataclass(frozen=True)
class PostingsTables:
    names: Postings  # the tables these statements write

    @cached_property
    def insert_postings(self) -> TextClause:
        return text(f"""
        INSERT INTO {self.names.postings} (tenant, term, {self.names.id_column}, tf, length)
        SELECT :tenant, * FROM unnest(CAST(:terms AS text[]), CAST(:ids AS uuid[]), CAST(:tfs AS int[]),
                                      CAST(:lengths AS int[]))
        """)

    @cached_property
    def count_terms(self) -> TextClause:
        return text(f"""
        INSERT INTO {self.names.terms} (tenant, term, df)
        SELECT :tenant, * FROM unnest(CAST(:terms AS text[]), CAST(:dfs AS int[]))
        ON CONFLICT (tenant, term) DO UPDATE SET df = {self.names.terms}.df + EXCLUDED.df
        RETURNING term, df
        """)

    @cached_property
    def add_stats(self) -> TextClause:
        return text(f"""
        INSERT INTO {self.names.stats} (tenant, n_docs, total_length) VALUES (:tenant, :n, :total)
        ON CONFLICT (tenant) DO UPDATE SET n_docs = {self.names.stats}.n_docs + EXCLUDED.n_docs,
                                           total_length = {self.names.stats}.total_length + EXCLUDED.total_length
        """)

    @cached_property
    def delete_postings(self) -> TextClause:
        n = self.names
        return text(f"DELETE FROM {n.postings} WHERE tenant = :tenant AND {n.id_column} = ANY(:ids)"
                    f" RETURNING term, {n.id_column} AS id")

    @cached_property
    def uncount_terms(self) -> TextClause:
        return text(f"""
        UPDATE {self.names.terms} t SET df = t.df - b.n
        FROM unnest(CAST(:terms AS text[]), CAST(:ns AS int[])) AS b(term, n)
        WHERE t.tenant = :tenant AND t.term = b.term
        RETURNING t.term, t.df
        """)

    @cached_property
    def drop_terms(self) -> TextClause:
        return text(f"DELETE FROM {self.names.terms} WHERE tenant = :tenant AND term = ANY(:terms) AND df <= 0")


def index(conn: Connection, tables: PostingsTables, tenant: str, docs: Sequence[tuple[Any, Counter[str]]]) -> None:
    """Add `docs` (id, term frequencies) of `tenant`: their postings, each term's df counted once per document, and
    their number and total length to the statistics. A document without terms still counts."""
    if not docs:
        return
    rows: list[tuple[str, Any, int, int]] = []  # (term, id, tf, length)
    df: Counter[str] = Counter()
    total = 0
    for doc_id, tfs in docs:
        length = sum(tfs.values())
        total += length
        rows.extend((term, doc_id, tf, length) for term, tf in tfs.items())
        df.update(tfs.keys())
    if rows:
        # In (term, id) order: each term's new entries go into its part of the (tenant, term) index one after
        # another, instead of jumping across the whole index for every document (ids are random).
        rows.sort(key=lambda r: (r[0], str(r[1])))
        terms, ids, counts, lengths = (list(column) for column in zip(*rows, strict=True))
        conn.execute(tables.insert_postings, {"tenant": tenant, "terms": terms, "ids": ids, "tfs": counts,
                                              "lengths": lengths})
        terms = sorted(df)
        counted = conn.execute(tables.count_terms, {"tenant": tenant, "terms": terms, "dfs": [df[t] for t in terms]})
        if tables.names.blocks:
            term_blocks.update(conn, tables.names, tenant, {r.term: r.df for r in counted}, added=docs)
    conn.execute(tables.add_stats, {"tenant": tenant, "n": len(docs), "total": total})


def unindex(conn: Connection, tables: PostingsTables, tenant: str, ids: Sequence[Any], total_length: int) -> None:
    """Remove documents `ids` of `tenant` (whose lengths sum to `total_length`: a document's length is kept by its
    domain's own row, since one without terms has no postings): their postings, one df per document from each of
    their terms (a term left with none is deleted), and their number and length from the statistics."""
    if not ids:
        return
    held: dict[Any, list[str]] = {}
    for row in conn.execute(tables.delete_postings, {"tenant": tenant, "ids": list(ids)}):
        held.setdefault(row.id, []).append(row.term)
    terms = Counter(term for doc_terms in held.values() for term in doc_terms)
    if terms:
        names = sorted(terms)
        counted = conn.execute(tables.uncount_terms, {"tenant": tenant, "terms": names,
                                                      "ns": [terms[t] for t in names]})
        df_now = {r.term: r.df for r in counted}
        conn.execute(tables.drop_terms, {"tenant": tenant, "terms": names})
        if tables.names.blocks:
            term_blocks.update(conn, tables.names, tenant, df_now, removed=held.items())
    conn.execute(tables.add_stats, {"tenant": tenant, "n": -len(ids), "total": -total_length})


__all__ = ["PostingsTables", "index", "unindex"]
