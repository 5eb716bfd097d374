"""Append a batch of events atomically, with optimistic concurrency and producer idempotency."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, text
from sqlalchemy.exc import IntegrityError

from domain.errors import ConcurrencyConflict, RetryableConflict
from domain.events import MemoryRecorded, NewEvent
from eventstore.codec import seal

_EXISTING_KEYS = text("""
SELECT idempotency_key, position FROM events
WHERE tenant = :tenant AND idempotency_key = ANY(:keys)
""")

_STREAM_HEADS = text("""
SELECT stream_id, max(stream_version) AS version FROM events
WHERE tenant = :tenant AND stream_id = ANY(:streams)
GROUP BY stream_id
""")

# One round trip for the whole batch; unnest keeps the batch order, so positions follow it.
_INSERT = text("""
INSERT INTO events (event_id, tenant, stream_id, stream_version, type, schema_version, data, metadata,
                    occurred_at, recorded_at, idempotency_key)
SELECT b.event_id, :tenant, b.stream_id, b.stream_version, b.type, b.schema_version, b.data, b.metadata,
       b.occurred_at, coalesce(b.recorded_at, clock_timestamp()), b.idempotency_key
FROM unnest(CAST(:event_ids AS uuid[]), CAST(:stream_ids AS text[]), CAST(:versions AS bigint[]),
            CAST(:types AS text[]), CAST(:schema_versions AS int[]), CAST(:datas AS jsonb[]),
            CAST(:metadatas AS jsonb[]), CAST(:occurred AS timestamptz[]), CAST(:recorded AS timestamptz[]),
            CAST(:keys AS text[]))
     WITH ORDINALITY AS b(event_id, stream_id, stream_version, type, schema_version, data, metadata, occurred_at,
                          recorded_at, idempotency_key, ord)
ORDER BY b.ord
RETURNING event_id, position
""")


def existing_positions(conn: Connection, tenant: str, keys: Sequence[str]) -> dict[str, int]:
    """Positions of the events already appended for this tenant under these idempotency keys. A key with a NUL is
    in no event (PostgreSQL text cannot hold one, and the append refuses it): not asked, so a caller that looks
    a retry up before validating (POST /v1/memories/{id}/supersede) gets its 422 from the append, not a 500."""
    asked = [k for k in keys if "\x00" not in k]
    if not asked:
        return {}
    return dict(conn.execute(_EXISTING_KEYS, {"tenant": tenant, "keys": asked}).all())


def append(conn: Connection, tenant: str, events: Sequence[NewEvent], metadata: dict[str, Any]) -> list[int]:
    """Append `events` in the caller's transaction and answer their positions, in order.

    Every event is written with `metadata`, except one that carries its own (`NewEvent.metadata`): the write
    path's system decisions name their own actor and causation in the same transaction as the write.

    An event whose idempotency key was already appended for this tenant is not written again; its
    original position is answered instead. A batch either has all its keys already appended (a retry)
    or none of them; a mix is a conflict, because part of it was appended under other content.
    """
    if not events:
        return []
    keys = [e.idempotency_key for e in events if e.idempotency_key]
    if keys:
        existing: dict[str, int] = dict(conn.execute(_EXISTING_KEYS, {"tenant": tenant, "keys": keys}).all())
        if existing:
            if len(existing) == len(keys) == len(events):
                return [existing[k] for k in keys]  # every event has a key: keys are the events' in order
            raise ConcurrencyConflict(
                f"{len(existing)} of {len(events)} idempotency keys were already appended in another batch")

    streams = sorted({e.stream_id for e in events})
    heads: dict[str, int] = dict(conn.execute(_STREAM_HEADS, {"tenant": tenant, "streams": streams}).all())
    versions: list[int] = []
    next_version = dict(heads)
    for e in events:
        current = next_version.get(e.stream_id, 0)
        if e.is_a(MemoryRecorded) and current:
            raise ConcurrencyConflict(f"stream {e.stream_id!r} already exists (version {current}): a memory is "
                                      "recorded once")
        if e.expected_version is not None and e.expected_version != current:
            raise ConcurrencyConflict(
                f"stream {e.stream_id!r} is at version {current}, expected {e.expected_version}")
        next_version[e.stream_id] = current + 1
        versions.append(current + 1)

    now = datetime.now(UTC)
    params = {
        "tenant": tenant,
        "metadatas": [json.dumps(metadata if e.metadata is None else e.metadata) for e in events],
        "event_ids": [e.event_id for e in events],
        "stream_ids": [e.stream_id for e in events],
        "versions": versions,
        "types": [e.type for e in events],
        "schema_versions": [e.schema_version for e in events],
        "datas": [json.dumps(d) for d in seal(conn, tenant, events)],  # content sealed (eventstore/codec.py)
        "occurred": [e.occurred_at or now for e in events],
        "recorded": [e.recorded_at for e in events],
        "keys": [e.idempotency_key for e in events],
    }
    try:
        if keys:  # a savepoint, so that a concurrent producer's same keys can be looked up after the conflict
            with conn.begin_nested():
                rows = conn.execute(_INSERT, params).all()
        else:  # nothing to look up after a conflict: the caller's transaction is given up (two round trips fewer)
            rows = conn.execute(_INSERT, params).all()
    except IntegrityError as exc:
        constraint = getattr(getattr(exc.orig, "diag", None), "constraint_name", "")
        if constraint == "events_idempotency" and keys:
            # A concurrent producer appended the same keys first: answer its positions.
            existing = dict(conn.execute(_EXISTING_KEYS, {"tenant": tenant, "keys": keys}).all())
            if len(existing) == len(events):
                return [existing[k] for k in keys]  # as many distinct keys as events: one per event, in order
        if constraint in ("events_stream_version", "events_idempotency"):
            raise RetryableConflict(f"a concurrent append won the race ({constraint}); retry") from None
        raise
    by_id = {row.event_id: row.position for row in rows}
    return [by_id[e.event_id] for e in events]
