"""The keyword leg for a whole tenant, or an agent's documents, from the postings packed per term
(readmodels/term_blocks.py): Okapi BM25 scored in numpy over every posting of the query's terms (an agent's only:
`documents_among`), read as a few rows each, then the scope's filters looked up for the best `later_width(n)` in
PostgreSQL, as the filter-later plan of recall/keyword.py does.

The same answer as that plan: every posting is scored with the formula recall/keyword.py uses (float8, a term's
idf from its df and the tenant's n_docs, avgdl from the tenant's statistics); when fewer than n of the best width
pass the filters while more were scored, None says so and the caller reads every posting in SQL instead. Ties at
one score go by id, as there (uuid order is byte order).
"""

from __future__ import annotations

import math
import uuid
from functools import cache
from typing import Any

import numpy as np
from sqlalchemy import Connection, text

from infra.db import binary_rows
from readmodels.postings import Postings
from readmodels.term_blocks import RECORD, id_halves, unpack


@cache
def _blocks(names: Postings) -> str:
    """The query terms' packed rows, each with its term's df and the tenant's statistics: stats, terms, then the
    blocks, the order recall/keyword.py's statement names its tables (projections/rebuild.py)."""
    return f"""
    SELECT s.n_docs, s.total_length, t.term, t.df, b.bucket, b.postings
    FROM {names.stats} s
    JOIN {names.terms} t ON t.tenant = s.tenant AND t.term = ANY(:terms)
    JOIN {names.blocks} b ON b.tenant = t.tenant AND b.term = t.term
    WHERE s.tenant = :tenant
    """


def bm25_top_packed(conn: Connection, names: Postings, tenant: str, terms: list[str], n: int, width: int, k1: float,
                    b: float, docs: str, where: str, params: dict[str, object],
                    among: np.ndarray | None = None) -> dict[uuid.UUID, float] | None:
    """The top n documents by BM25 for the distinct `terms` in the postings `names` holds, whose row in `docs`
    (alias d) passes `where`, from the best `width` scored; None when fewer than n of them pass and more were
    scored (the caller then reads every posting). `among` (documents_among): only documents whose id starts with
    one of these eight bytes are scored, a bound of the scope's (an agent's documents) that `where` then checks."""
    # in term order, so every document's weights are summed in one order (_summed); read as bytes (binary_rows)
    rows = sorted(binary_rows(conn, _blocks(names), {"tenant": tenant, "terms": terms}),
                  key=lambda r: (r.term, r.bucket))
    if not rows:
        return {}
    records = unpack(b"".join(r.postings for r in rows))
    n_docs, total_length = rows[0].n_docs, rows[0].total_length
    avgdl = float(total_length) / max(n_docs, 1)
    # each record's term's idf: a row's records are of one term
    idf = np.repeat([math.log(1 + (n_docs - r.df + 0.5) / (r.df + 0.5)) for r in rows],
                    [len(r.postings) // RECORD.itemsize for r in rows])
    if among is not None:
        first = id_halves(records["id"])[:, 0]
        at = np.minimum(np.searchsorted(among, first), max(len(among) - 1, 0))
        kept = among[at] == first if len(among) else np.zeros(len(first), dtype=bool)
        records, idf = records[kept], idf[kept]
    tf, length = records["tf"].astype(np.float64), records["length"].astype(np.float64)
    # the operations of recall/keyword.py's `idf * weight`, in its order
    weights = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avgdl))
    scores, unique = _summed(records["id"], weights)
    best = _best(scores, width)
    # The filters looked up in rank order, a first chunk a little past n (most pass: a recall's statuses are most
    # of a tenant's), then the rest of the width only when too few of it passed: the same answer as one lookup of
    # the width, in about half the probes (at 1M memories a probe of `docs` is a heap page).
    passed: list[Any] = []
    first_chunk = n + n // 8 + 10
    for chunk in (best[:first_chunk], best[first_chunk:]):
        if len(passed) >= n or len(chunk) == 0:
            break
        # prepared once a connection has run it five times (psycopg): the text is the same for a scope of one shape
        passed += conn.execute(text(f"""
            SELECT c.id, c.score FROM unnest(CAST(:ids AS uuid[]), CAST(:scores AS float8[])) WITH ORDINALITY AS
                c(id, score, rank)
            JOIN {docs} d ON d.tenant = :tenant AND d.{names.id_column} = c.id
            WHERE {where} ORDER BY c.rank LIMIT :n"""),
                               {**params, "ids": [uuid.UUID(bytes=bytes(i)) for i in unique[chunk]],
                                "scores": scores[chunk].tolist(), "n": n - len(passed)}).all()
    if len(passed) < n and len(unique) > width:
        return None
    return {r.id: float(r.score) for r in passed}


def documents_among(conn: Connection, docs: str, id_column: str, where: str, params: dict[str, object],
                    most: int) -> np.ndarray | None:
    """The first eight bytes of the ids of `docs` (alias d) rows passing `where`, sorted: a scope's bound for
    bm25_top_packed's `among`, read as one bytea; None when they are more than `most` (then reading every
    posting, or a walk, is the cheaper plan)."""
    [row] = binary_rows(conn, f"""
        SELECT count(*) AS n, string_agg(uuid_send(x.id), ''::bytea) AS ids
        FROM (SELECT d.{id_column} AS id FROM {docs} d WHERE {where} LIMIT :most + 1) x""", {**params, "most": most})
    if row.n > most:
        return None
    return np.sort(id_halves(np.frombuffer(row.ids or b"", dtype="V16"))[:, 0])


def _summed(ids: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each document's score, the sum of its postings' weights in the order they came (term by term: one order for
    every document, so two with the same postings tie exactly), with the documents' ids in id order. Grouped by
    the ids' first eight bytes (a sort of integers: a third of what np.unique took, which sorts stably to find
    each first occurrence), unless two ids share them: then by all sixteen."""
    if len(ids) == 0:
        return np.zeros(0), ids
    halves = id_halves(ids)
    order = np.argsort(halves[:, 0])
    first, second = halves[order, 0], halves[order, 1]
    new = first[1:] != first[:-1]  # where a document's postings start, in id order (but the first)
    if np.any((second[1:] != second[:-1]) & ~new):  # two ids share their first eight bytes
        unique, inverse = np.unique(ids, return_inverse=True)
        return np.bincount(inverse, weights=weights, minlength=len(unique)), unique
    document = np.empty(len(order), dtype=np.intp)
    document[order] = np.concatenate(([0], np.cumsum(new)))
    starts = np.concatenate(([0], np.flatnonzero(new) + 1))
    # bincount adds each posting's weight in the order they came, as the SQL plan's sum does
    return np.bincount(document, weights=weights, minlength=len(starts)), ids[order[starts]]


def _best(scores: np.ndarray, width: int) -> np.ndarray:
    """Indices of the best `width` scores, best first, ties by id (the scores are in id order, _summed, and a
    stable sort of them negated keeps it among equals)."""
    if len(scores) > width:
        # every index scoring at least the width-th best, then the stable order among them
        floor = np.partition(scores, len(scores) - width)[len(scores) - width]
        candidates = np.flatnonzero(scores >= floor)
    else:
        candidates = np.arange(len(scores))
    order = candidates[np.argsort(-scores[candidates], kind="stable")]
    return order[:width]


__all__ = ["bm25_top_packed", "documents_among"]
