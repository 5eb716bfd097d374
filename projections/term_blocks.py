"""The packed layout of a domain's postings (readmodels/term_blocks.py), kept by the one postings writer
(projections/postings.py index / unindex) in the same transaction as the postings it packs.

A change rewrites only the buckets it touches: each changed term's buckets holding an added or removed id, or all
of the term's when its bucket count changes with its df (split or joined again). What a bucket holds is a function
of the term's postings (readmodels/term_blocks.py), so the rows do not depend on how the log was cut into
batches, and they equal what migration 0035 packs from the postings. Called by projections/postings.py with each
term's df after the change, as its count of the terms returned it.

A replay into fresh tables (a rebuild, a verify) needs only the final rows: within `packed_later` the writer leaves
the blocks alone, and `repack` then packs them from the postings in one statement a domain (at 1M memories, a
batch of 500 rewrote ~3,000 rows of 6 KB; the whole table packs in ~13 s). The same rows, by the same function.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
from sqlalchemy import Connection, TextClause, text

from readmodels.postings import Postings
from readmodels.term_blocks import EVERY_DOMAIN, RECORD, bucket_of, buckets, pack, packed_from_postings, unpack

_LATER = "term_blocks_packed_later"  # a key of the connection's info: the writer leaves the blocks to `repack`


@contextmanager
def packed_later(conn: Connection) -> Iterator[None]:
    """Within it, postings written on `conn` leave their blocks as they are, for `repack` to fill."""
    conn.info[_LATER] = True
    try:
        yield
    finally:
        conn.info.pop(_LATER, None)


def later(conn: Connection) -> bool:
    return bool(conn.info.get(_LATER))


def repack(conn: Connection, tables: Iterable[str]) -> None:
    """Pack the blocks among `tables` (a projector's, in the search_path's schema) from their postings, every
    tenant's."""
    for names in EVERY_DOMAIN:
        if names.blocks in tables:
            conn.execute(text(f"DELETE FROM {names.blocks}"))
            conn.execute(text(f"INSERT INTO {names.blocks} (tenant, term, bucket, postings) "
                              f"{packed_from_postings(names)}"))


@dataclass(frozen=True)
class _Statements:
    read: TextClause
    delete: TextClause
    upsert: TextClause


@cache
def _statements(names: Postings) -> _Statements:
    blocks = names.blocks
    keys = "unnest(CAST(:terms AS text[]), CAST(:buckets AS int[])) AS k(term, bucket)"
    return _Statements(
        text(f"""SELECT b.term, b.postings FROM {blocks} b JOIN {keys}
                 ON b.tenant = :tenant AND b.term = k.term AND b.bucket = k.bucket"""),
        text(f"""DELETE FROM {blocks} b USING {keys}
                 WHERE b.tenant = :tenant AND b.term = k.term AND b.bucket = k.bucket"""),
        # The rows' bytes as one bytea cut at their offsets: an array of bytea is sent as escaped text (psycopg), a
        # third of a batch's time at 1M memories; one bytea goes as it is.
        text(f"""INSERT INTO {blocks} (tenant, term, bucket, postings)
                 SELECT :tenant, r.term, r.bucket, substring(CAST(:postings AS bytea) FROM r.start FOR r.size)
                 FROM unnest(CAST(:terms AS text[]), CAST(:buckets AS int[]), CAST(:starts AS int[]),
                             CAST(:sizes AS int[])) AS r(term, bucket, start, size)
                 ON CONFLICT (tenant, term, bucket) DO UPDATE SET postings = EXCLUDED.postings"""))


@dataclass
class _TermChange:
    added: list[tuple[bytes, int, int]] = field(default_factory=list)  # (id bytes, tf, length)
    removed: set[bytes] = field(default_factory=set)


def update(conn: Connection, names: Postings, tenant: str, df_now: Mapping[str, int],
           added: Sequence[tuple[Any, Counter[str]]] = (), removed: Iterable[tuple[Any, Iterable[str]]] = ()) -> None:
    """Pack `added` documents (id, term frequencies) into `tenant`'s term blocks of the domain `names` holds, and
    take `removed` ones (id, the terms its postings held) out of them; `df_now`: each changed term's df after the
    change (0 or absent: none left), as the terms table now counts it. Nothing within `packed_later`."""
    if later(conn):
        return
    changes: dict[str, _TermChange] = {}
    for doc_id, terms in removed:
        for term in terms:
            changes.setdefault(term, _TermChange()).removed.add(_id_bytes(doc_id))
    for doc_id, tfs in added:
        length = sum(tfs.values())
        for term, tf in tfs.items():
            changes.setdefault(term, _TermChange()).added.append((_id_bytes(doc_id), tf, length))
    if not changes:
        return
    terms = sorted(changes)
    sql = _statements(names)
    # (term, bucket) keys whose rows are read and replaced, and the bucket count each changed term ends with
    keys: list[tuple[str, int]] = []
    ends: dict[str, int] = {}
    for term in terms:
        change, df = changes[term], max(df_now.get(term, 0), 0)
        before = df - len(change.added) + len(change.removed)
        ends[term] = buckets(df)
        ids = np.array([a[0] for a in change.added] + sorted(change.removed), dtype="V16")
        if before and buckets(before) != ends[term]:
            keys += [(term, b) for b in range(buckets(before))]  # split or joined: every bucket
        keys += [(term, int(b)) for b in set(bucket_of(ids, ends[term]).tolist())]
    keys = sorted(set(keys))
    params = {"tenant": tenant, "terms": [k[0] for k in keys], "buckets": [k[1] for k in keys]}
    held: dict[str, list[np.ndarray]] = {}
    for row in conn.execute(sql.read, params):
        held.setdefault(row.term, []).append(unpack(row.postings))
    rows: list[tuple[str, int, bytes]] = []
    for term in terms:
        rows += _packed(term, held.get(term, []), changes[term], ends[term])
    # rows replace theirs in place; a bucket emptied, or gone with a join, is deleted
    gone = sorted(set(keys) - {(r[0], r[1]) for r in rows})
    if gone:
        conn.execute(sql.delete, {"tenant": tenant, "terms": [k[0] for k in gone], "buckets": [k[1] for k in gone]})
    if rows:
        sizes = [len(r[2]) for r in rows]
        starts = np.cumsum([1, *sizes[:-1]]).tolist()  # substring counts from 1
        conn.execute(sql.upsert, {"tenant": tenant, "terms": [r[0] for r in rows], "buckets": [r[1] for r in rows],
                               "postings": b"".join(r[2] for r in rows), "starts": starts, "sizes": sizes})


def _packed(term: str, held: list[np.ndarray], change: _TermChange, n: int) -> list[tuple[str, int, bytes]]:
    """The term's rows among `n` buckets: the records `held` (the rows read) less the removed ids, plus the added."""
    old = np.concatenate(held) if held else np.empty(0, dtype=RECORD)
    if change.removed and len(old):
        removed = np.array(sorted(change.removed), dtype="V16")
        old = old[~np.isin(old["id"], removed)]
    new = np.empty(len(change.added), dtype=RECORD)
    if change.added:
        ids, tfs, lengths = zip(*change.added, strict=True)
        new["id"], new["tf"], new["length"] = np.array(ids, dtype="V16"), tfs, lengths
    return [(term, bucket, postings) for bucket, postings in pack(np.concatenate([old, new]), n)]


def _id_bytes(doc_id: Any) -> bytes:
    return (doc_id if isinstance(doc_id, uuid.UUID) else uuid.UUID(str(doc_id))).bytes


__all__ = ["later", "packed_later", "repack", "update"]
