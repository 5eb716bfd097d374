"""Queued producer messages the ingest actor could not append, kept whole with the reason until an operator retries
(appends them now: their idempotency keys make that safe) or skips them. Nothing a producer enqueued is dropped."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy import Connection, Engine, text

from domain.errors import DomainError
from domain.events.producers import MAX_TENANT_CHARS, check_message
from infra.metrics import INGEST_MESSAGES_DEAD_LETTERED
from services.append_events import EventInput, append_events

log = structlog.get_logger(__name__)

MAX_REASON_CHARS = 2000

_PARK = text("""
INSERT INTO ingest_dead_letters (message_id, tenant, message, reason, error)
VALUES (:message_id, :tenant, :message, :reason, :error)
ON CONFLICT (message_id) DO UPDATE SET reason = EXCLUDED.reason, error = EXCLUDED.error,
    status = 'parked', resolved_at = NULL, resolved_by = NULL
    WHERE ingest_dead_letters.status = 'parked'
RETURNING id
""")
_LIST = text("""
SELECT id, tenant, message, reason, error, status, positions, created_at, resolved_at, resolved_by
FROM ingest_dead_letters
WHERE (CAST(:tenant AS text) IS NULL OR tenant = :tenant) AND status = ANY(:statuses)
ORDER BY id LIMIT :limit
""")
_ONE = text("SELECT id, tenant, message, status FROM ingest_dead_letters WHERE id = :id FOR UPDATE")
_COUNT = text("""
SELECT count(*) FROM ingest_dead_letters WHERE status = 'parked' AND (CAST(:tenant AS text) IS NULL OR tenant = :tenant)
""")
_RESOLVE = text("""
UPDATE ingest_dead_letters SET status = :status, positions = :positions, resolved_at = clock_timestamp(),
                               resolved_by = :by
WHERE id = :id AND status = 'parked'
""")
_REFUSED_AGAIN = text("UPDATE ingest_dead_letters SET reason = :reason, error = :error WHERE id = :id")


def _clean(value: str, limit: int) -> str:
    """Storable text: no NUL, no lone surrogate (escaped), bounded."""
    return value.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")[:limit]


def _message_text(tenant: object, events: object, metadata: object) -> str:
    # ASCII JSON: whatever text the producer sent (lone surrogates, NUL) is kept, escaped, in a text column.
    return json.dumps({"tenant": tenant, "events": events, "metadata": metadata}, sort_keys=True, default=str)


def park(engine: Engine, tenant: object, events: object, metadata: object, reason: str, error: str) -> int | None:
    """Keep a message that cannot be appended, once however often it is redelivered. Answers its id."""
    message = _message_text(tenant, events, metadata)
    message_id = hashlib.sha256(message.encode()).hexdigest()
    with engine.begin() as conn:
        row = conn.execute(_PARK, {"message_id": message_id, "tenant": _clean(str(tenant), MAX_TENANT_CHARS),
                                   "message": message, "reason": _clean(reason, MAX_REASON_CHARS),
                                   "error": _clean(error, 200)}).first()
    INGEST_MESSAGES_DEAD_LETTERED.inc()
    log.error("ingest.dead_lettered", tenant=_clean(str(tenant), MAX_TENANT_CHARS), id=row[0] if row else None,
              reason=_clean(reason, MAX_REASON_CHARS), error=error)
    return row[0] if row else None


@dataclass(frozen=True)
class IngestDeadLetter:
    id: int
    tenant: str
    message: str
    reason: str
    error: str
    status: str
    positions: list[int] | None
    created_at: datetime
    resolved_at: datetime | None
    resolved_by: str | None

    def events(self) -> int:
        parsed = json.loads(self.message).get("events")
        return len(parsed) if isinstance(parsed, list) else 0


def dead_letters(conn: Connection, tenant: str | None = None, statuses: Sequence[str] = ("parked",),
                 limit: int = 1000) -> list[IngestDeadLetter]:
    rows = conn.execute(_LIST, {"tenant": tenant, "statuses": list(statuses), "limit": limit})
    return [IngestDeadLetter(**r._mapping) for r in rows]


def parked_count(conn: Connection, tenant: str | None = None) -> int:
    return int(conn.execute(_COUNT, {"tenant": tenant}).scalar_one())


@dataclass(frozen=True)
class IngestResolution:
    id: int
    outcome: str  # retried | skipped | failed (still parked, reason updated) | not_parked
    positions: list[int] | None = None
    reason: str | None = None


def append_message(engine: Engine, tenant: object, events: object, metadata: object) -> list[int]:
    """Append one queued message through the write path, as the ingest actor does. Raises a DomainError when the
    message itself is refused (bad input, a conflict that no retry resolves)."""
    check_message(tenant, events, metadata)
    # check_message refused any other shape: tenant is a str, events a list of dicts, metadata a dict.
    items = [EventInput(**e) for e in events]  # type: ignore[attr-defined]
    return append_events(engine, tenant, items, metadata)  # type: ignore[arg-type]


def retry(engine: Engine, dead_letter_id: int, by: str) -> IngestResolution:
    with engine.begin() as conn:
        row = conn.execute(_ONE, {"id": dead_letter_id}).first()
        if row is None or row.status != "parked":
            return IngestResolution(dead_letter_id, "not_parked")
        message: dict[str, Any] = json.loads(row.message)
        try:
            positions = append_message(engine, message.get("tenant"), message.get("events"), message.get("metadata"))
        except DomainError as exc:
            reason = _clean(str(exc), MAX_REASON_CHARS)
            conn.execute(_REFUSED_AGAIN, {"id": dead_letter_id, "reason": reason, "error": type(exc).__name__})
            return IngestResolution(dead_letter_id, "failed", reason=reason)
        conn.execute(_RESOLVE, {"id": dead_letter_id, "status": "retried", "positions": positions, "by": by})
    log.info("ingest.dead_letter_retried", id=dead_letter_id, by=by, events=len(positions))
    return IngestResolution(dead_letter_id, "retried", positions)


def skip(engine: Engine, dead_letter_id: int, by: str) -> IngestResolution:
    with engine.begin() as conn:
        done = conn.execute(_RESOLVE, {"id": dead_letter_id, "status": "skipped", "positions": None,
                                       "by": by}).rowcount
    if done:
        log.info("ingest.dead_letter_skipped", id=dead_letter_id, by=by)
    return IngestResolution(dead_letter_id, "skipped" if done else "not_parked")
