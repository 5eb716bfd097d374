"""A domain's BM25 postings packed per term (its `Postings.blocks` table: `keyword_term_blocks` for memories, the
one domain that keeps them: PACKED_DOMAINS), a second layout of its postings that a whole-tenant keyword leg reads
in a few rows instead of a row per posting (recall/packed_bm25.py).

Each term's postings are split into `buckets(df)` rows by the low bits of the document's id, each row's
`postings` one bytea of 24-byte records (the id's 16 bytes, tf and length as big-endian int4), ordered by id. The
rows are a function of the postings alone, not of the order they came in: the postings writer keeps them
(projections/term_blocks.py), migration 0035 fills them from the postings (`packed_from_postings`), and a rebuild
gives the same bytes either way.
"""

from __future__ import annotations

import itertools

import numpy as np

from readmodels.item_domains import ITEM_DOMAINS
from readmodels.memories import MEMORY_POSTINGS
from readmodels.postings import Postings

BLOCK = 256  # postings a bucket holds at most on average (a row of 6 KB, kept in its page: migration 0035)
RECORD = np.dtype([("id", "V16"), ("tf", ">i4"), ("length", ">i4")])
# The domains whose postings are packed: memories. An item domain's whole-tenant reads past 20k postings are walked
# (recall/keyword.py), so its blocks would serve 5k-20k only, while sessions' projection took twice as long with
# them (100k messages: 43 → 82 s after the last append; docs/recall.md, session 27).
PACKED_DOMAINS = tuple(p for p in (MEMORY_POSTINGS, *(domain.postings for domain in ITEM_DOMAINS)) if p.blocks)


def buckets(df: int) -> int:
    """How many rows a term of `df` postings is split into: the least power of two that keeps each within BLOCK."""
    return 1 << max((df + BLOCK - 1) // BLOCK - 1, 0).bit_length()  # BLOCK read here: a test sets it small


def bucket_of(ids: np.ndarray, n: int) -> np.ndarray:
    """Each id's bucket (ids: RECORD["id"] values) among `n`, a power of two: the low bits of its last four bytes,
    as packed_from_postings computes it."""
    low = np.frombuffer(np.ascontiguousarray(ids).tobytes(), dtype=">u4").reshape(-1, 4)[:, 3]
    return (low & np.uint32(n - 1)).astype(np.int64)


def id_halves(ids: np.ndarray) -> np.ndarray:
    """The ids' (RECORD["id"] values) two big-endian eight-byte halves as native unsigned integers, one row an id:
    uuid order, PostgreSQL's, is the order of (first, second)."""
    return np.frombuffer(np.ascontiguousarray(ids).tobytes(), dtype=">u8").reshape(-1, 2).astype(np.uint64)


def pack(records: np.ndarray, n: int) -> list[tuple[int, bytes]]:
    """A term's rows among `n` buckets, (bucket, bytes) in bucket order: `records` (RECORD's fields, in any byte
    order: numpy's concatenation gives the machine's) as RECORD, each bucket's in id order, the order PostgreSQL's
    uuid comparison gives (its bytes in order: big-endian halves)."""
    records = records.astype(RECORD)
    of = bucket_of(records["id"], n)
    halves = id_halves(records["id"])
    order = np.lexsort((halves[:, 1], halves[:, 0], of))
    records, of = records[order], of[order]
    cuts = [0, *(np.flatnonzero(np.diff(of)) + 1).tolist(), len(of)]
    return [(int(of[start]), records[start:end].tobytes()) for start, end in itertools.pairwise(cuts)
            if end > start]


def unpack(postings: bytes) -> np.ndarray:
    return np.frombuffer(postings, dtype=RECORD)


def packed_from_postings(names: Postings, where: str = "") -> str:
    """SQL of the rows (tenant, term, bucket, postings) of every term the postings `names` holds (`where`: a WHERE
    on p, or none): the bytes `pack` gives over the same buckets. ((df + BLOCK - 1) / BLOCK - 1)'s bit length is
    buckets()'s exponent; the bucket, the low bits of the id's last 8 hex digits."""
    key = f"p.{names.id_column}"
    return f"""
SELECT p.tenant, p.term, g.bucket,
       string_agg(uuid_send({key}) || int4send(p.tf) || int4send(p.length), ''::bytea ORDER BY {key})
FROM {names.postings} p
JOIN {names.terms} t ON t.tenant = p.tenant AND t.term = p.term
CROSS JOIN LATERAL (SELECT ('x' || right({key}::text, 8))::bit(32)::int
                           & ((1 << length(ltrim((((t.df + {BLOCK - 1}) / {BLOCK}) - 1)::bit(32)::text, '0'))) - 1)
                           AS bucket) g
{where}
GROUP BY p.tenant, p.term, g.bucket
"""


__all__ = ["BLOCK", "PACKED_DOMAINS", "RECORD", "bucket_of", "buckets", "id_halves", "pack", "packed_from_postings",
           "unpack"]
