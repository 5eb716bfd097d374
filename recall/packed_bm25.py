"""The keyword leg for a whole tenant from the postings packed per term (readmodels/term_blocks.py):
Okapi BM25 scored in numpy over every posting of the query's terms, read as a few rows each, then the scope's
filters looked up for the best `later_width(n)` in PostgreSQL, as the filter-later plan of recall/keyword.py does.

The same answer as that plan: every posting is scored with the formula recall/keyword.py uses (float8, a term's
idf from its df and the tenant's n_docs, avgdl from the tenant's statistics); when fewer than n of the best width
pass the filters while more were scored, None says so and the caller reads every posting in SQL instead. Ties at
one score go by id, as there (uuid order is byte order).
"""

from __future__ import annotations

import math
import uuid
from functools import cache

import numpy as np
from sqlalchemy import Connection, TextClause, text

from readmodels.postings import Postings
from readmodels.term_blocks import RECORD, unpack


@cache
def _blocks(names: Postings) -> TextClause:
    """The query terms' packed rows, each with its term's df and the tenant's statistics: stats, terms, then the
    blocks, the order recall/keyword.py's statement names its tables (projections/rebuild.py)."""
    return text(f"""
    SELECT s.n_docs, s.total_length, t.df, b.postings
    FROM {names.stats} s
    JOIN {names.terms} t ON t.tenant = s.tenant AND t.term = ANY(:terms)
    JOIN {names.blocks} b ON b.tenant = t.tenant AND b.term = t.term
    WHERE s.tenant = :tenant
    """)


def bm25_top_packed(conn: Connection, names: Postings, tenant: str, terms: list[str], n: int, width: int, k1: float,
                    b: float, docs: str, where: str, params: dict[str, object]) -> dict[uuid.UUID, float] | None:
    """The top n documents by BM25 for the distinct `terms` in the postings `names` holds, whose row in `docs`
    (alias d) passes `where`, from the best `width` scored; None when fewer than n of them pass and more were
    scored (the caller then reads every posting)."""
    rows = conn.execute(_blocks(names), {"tenant": tenant, "terms": terms}).all()
    if not rows:
        return {}
    records = unpack(b"".join(r.postings for r in rows))
    n_docs, total_length = rows[0].n_docs, rows[0].total_length
    avgdl = float(total_length) / max(n_docs, 1)
    # each record's term's idf: a row's records are of one term
    idf = np.repeat([math.log(1 + (n_docs - r.df + 0.5) / (r.df + 0.5)) for r in rows],
                    [len(r.postings) // RECORD.itemsize for r in rows])
    tf, length = records["tf"].astype(np.float64), records["length"].astype(np.float64)
    # the operations of recall/keyword.py's `idf * weight`, in its order
    weights = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avgdl))
    scores, unique = _summed(records["id"], weights)
    best = _best(scores, width)
    # prepared once a connection has run it five times (psycopg): the text is the same for a scope of one shape
    passed = conn.execute(text(f"""
        SELECT c.id, c.score FROM unnest(CAST(:ids AS uuid[]), CAST(:scores AS float8[])) WITH ORDINALITY AS
            c(id, score, rank)
        JOIN {docs} d ON d.tenant = :tenant AND d.{names.id_column} = c.id
        WHERE {where} ORDER BY c.rank LIMIT :n"""),
                        {**params, "ids": [uuid.UUID(bytes=bytes(i)) for i in unique[best]],
                         "scores": scores[best].tolist(), "n": n}).all()
    if len(passed) < n and len(unique) > width:
        return None
    return {r.id: float(r.score) for r in passed}


def _summed(ids: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each document's score, the sum of its postings' weights, with the documents' ids in id order. Grouped by
    the ids' first eight bytes (a sort of integers, a sixth of sorting 16-byte strings), unless two ids share them:
    then by all sixteen."""
    halves = np.frombuffer(ids.tobytes(), dtype=">u8").reshape(-1, 2).astype(np.uint64)
    _, first, inverse = np.unique(halves[:, 0], return_index=True, return_inverse=True)
    if np.array_equal(halves[:, 1], halves[first, 1][inverse]):
        return np.bincount(inverse, weights=weights, minlength=len(first)), ids[first]
    unique, inverse = np.unique(ids, return_inverse=True)
    return np.bincount(inverse, weights=weights, minlength=len(unique)), unique


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


__all__ = ["bm25_top_packed"]
