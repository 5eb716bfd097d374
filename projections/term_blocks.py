"""The packed layout of a domain's postings (readmodels/term_blocks.py), kept by the one postings writer
(projections/postings.py index / unindex, for a domain whose `Postings.blocks` names them) in the same transaction
as the postings it packs.

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
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
from sqlalchemy import Connection, TextClause, text

from infra.db import binary_rows
from readmodels.postings import Postings
from readmodels.term_blocks import PACKED_DOMAINS, RECORD, bucket_of, buckets, pack, packed_from_postings, unpack

_LATER = "term_blocks_packed_later"  # a key of the connection's info: the writer leaves the blocks to `repack`


@contextmanager
def packed_later(conn: Connection) -> Iterator[None]:
    """Within it, postings written on `conn` leave their blocks as they are, for `repack` to fill."""
    conn.info[_LATER] = True
    try:
        yield
    finally:
        conn.info.pop(_LATER, None)


def _later(conn: Connection) -> bool:
    return bool(conn.info.get(_LATER))


def repack(conn: Connection, tables: Iterable[str]) -> None:
    """Pack the blocks among `tables` (a projector's, in the search_path's schema) from their postings, every
    tenant's."""
    for names in PACKED_DOMAINS:
        if names.blocks and names.blocks in tables:
            conn.execute(text(f"DELETE FROM {names.blocks}"))
            conn.execute(text(f"INSERT INTO {names.blocks} (tenant, term, bucket, postings) "
                              f"{packed_from_postings(names)}"))


@dataclass(frozen=True)
class _Statements:
    read: str  # read with binary_rows: the blocks' bytes as they are, not hex
    delete: TextClause
    upsert: TextClause


@cache
def _statements(names: Postings) -> _Statements:
    blocks = names.blocks
    assert blocks, "a domain that keeps its postings packed"
    keys = "unnest(CAST(:terms AS text[]), CAST(:buckets AS int[])) AS k(term, bucket)"
    return _Statements(
        f"""SELECT b.term, b.postings FROM {blocks} b JOIN {keys}
            ON b.tenant = :tenant AND b.term = k.term AND b.bucket = k.bucket""",
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
    before: int  # the term's df before the first change of the batch
    after: int  # and after its last
    records: dict[bytes, tuple[int, int] | None] = field(default_factory=dict)  # id: (tf, length), None: removed


class _Batch:
    """Changes gathered over a projection batch, in order (a document removed and added again is added), written
    once at its end: a batch of per-event changes (memories re-indexed one event at a time; a session's appends,
    when sessions were packed, ran past the event time limit) reads and rewrites each bucket once, not once an
    event."""

    def __init__(self) -> None:
        self.changes: dict[tuple[Postings, str], dict[str, _TermChange]] = {}

    def add(self, names: Postings, tenant: str, df_now: Mapping[str, int],
            added: Sequence[tuple[Any, Counter[str]]], removed: Iterable[tuple[Any, Iterable[str]]]) -> None:
        terms = self.changes.setdefault((names, tenant), {})
        entries: dict[str, list[tuple[bytes, tuple[int, int] | None]]] = defaultdict(list)
        delta: Counter[str] = Counter()  # this change's postings added less removed, a term
        for doc_id, doc_terms in removed:
            for term in doc_terms:
                entries[term].append((_id_bytes(doc_id), None))
                delta[term] -= 1
        for doc_id, tfs in added:
            length = sum(tfs.values())
            for term, tf in tfs.items():
                entries[term].append((_id_bytes(doc_id), (tf, length)))
                delta[term] += 1
        for term, changed in entries.items():
            df = max(df_now.get(term, 0), 0)
            change = terms.setdefault(term, _TermChange(before=df - delta[term], after=df))
            change.after = df
            change.records.update(changed)

    def write(self, conn: Connection) -> None:
        for (names, tenant), terms in self.changes.items():
            _write(conn, names, tenant, terms)
        self.changes = {}


_BATCH = "term_blocks_batch"  # a key of the connection's info: the batch gathering changes


@contextmanager
def batched(conn: Connection) -> Iterator[None]:
    """Within it (a projector's batch), changes on `conn` are gathered and written once, at its end, if it ends
    without an error. Nested: the outer one writes."""
    if _BATCH in conn.info:
        yield
        return
    batch = conn.info[_BATCH] = _Batch()
    try:
        yield
        batch.write(conn)
    finally:
        conn.info.pop(_BATCH, None)


def update(conn: Connection, names: Postings, tenant: str, df_now: Mapping[str, int],
           added: Sequence[tuple[Any, Counter[str]]] = (), removed: Iterable[tuple[Any, Iterable[str]]] = ()) -> None:
    """Pack `added` documents (id, term frequencies) into `tenant`'s term blocks of the domain `names` holds, and
    take `removed` ones (id, the terms its postings held) out of them, removed first; `df_now`: each changed term's
    df after the change (0 or absent: none left), as the terms table now counts it. Within `batched`, at its end;
    within `packed_later`, never."""
    if _later(conn):
        return
    batch = conn.info.get(_BATCH)
    if batch is not None:
        batch.add(names, tenant, df_now, added, removed)
        return
    batch = _Batch()
    batch.add(names, tenant, df_now, added, removed)
    batch.write(conn)


def _write(conn: Connection, names: Postings, tenant: str, terms: Mapping[str, _TermChange]) -> None:
    """Rewrite the buckets the changed terms' records fall in (all of a term's when its bucket count changed)."""
    sql = _statements(names)
    keys: set[tuple[str, int]] = set()  # (term, bucket) rows read and replaced
    changed = {term: np.array(list(change.records), dtype="V16") for term, change in terms.items()}
    for term, change in terms.items():
        if change.before and buckets(change.before) != buckets(change.after):
            keys.update((term, b) for b in range(buckets(change.before)))  # split or joined: every bucket
        keys.update((term, b) for b in bucket_of(changed[term], buckets(change.after)).tolist())
    ordered = sorted(keys)
    params = {"tenant": tenant, "terms": [k[0] for k in ordered], "buckets": [k[1] for k in ordered]}
    held: dict[str, list[np.ndarray]] = {}
    for row in binary_rows(conn, sql.read, params):
        held.setdefault(row.term, []).append(unpack(row.postings))
    rows: list[tuple[str, int, bytes]] = []
    for term in sorted(terms):
        rows += _packed(term, held.get(term, []), terms[term], changed[term])
    # rows replace theirs in place; a bucket emptied, or gone with a join, is deleted
    gone = sorted(keys - {(r[0], r[1]) for r in rows})
    if gone:
        conn.execute(sql.delete, {"tenant": tenant, "terms": [k[0] for k in gone], "buckets": [k[1] for k in gone]})
    if rows:
        sizes = [len(r[2]) for r in rows]
        starts = np.cumsum([1, *sizes[:-1]]).tolist()  # substring counts from 1
        conn.execute(sql.upsert, {"tenant": tenant, "terms": [r[0] for r in rows], "buckets": [r[1] for r in rows],
                                  "postings": b"".join(r[2] for r in rows), "starts": starts, "sizes": sizes})


def _packed(term: str, held: list[np.ndarray], change: _TermChange,
            changed: np.ndarray) -> list[tuple[str, int, bytes]]:
    """The term's rows: the records `held` (the rows read) less every `changed` id, plus those added."""
    old = np.concatenate(held) if held else np.empty(0, dtype=RECORD)
    if len(old):
        old = old[~np.isin(old["id"], changed)]
    added = [(i, r) for i, r in change.records.items() if r is not None]
    new = np.empty(len(added), dtype=RECORD)
    if added:
        new["id"] = np.array([i for i, _ in added], dtype="V16")
        new["tf"], new["length"] = [r[0] for _, r in added], [r[1] for _, r in added]
    return [(term, bucket, postings) for bucket, postings in pack(np.concatenate([old, new]), buckets(change.after))]


def _id_bytes(doc_id: Any) -> bytes:
    return (doc_id if isinstance(doc_id, uuid.UUID) else uuid.UUID(str(doc_id))).bytes


__all__ = ["batched", "packed_later", "repack", "update"]
