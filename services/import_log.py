"""Restore an exported log (`engramlog events export`, jsonl or parquet) into a store: `engramlog import log FILE`.

Each exported event is appended again through the eventstore's append, in the export's order (the log order), so
the target store seals its content with keys of its own (eventstore/codec.py): the export holds it opened, for an
operator. What makes a replay the same is kept: event ids, tenants, stream names and versions (each event is
appended with the expected version before it, so a gap or a reordering is refused, never renumbered), types,
payloads, metadata (actors, correlation and causation), occurred and recorded times. Positions and transaction
ids are the target's own, in the same order. Not kept: producers' idempotency keys (the export does not carry
them). An event exported at an older schema version is appended upcast to the current one (as every reader sees
it). A forgotten event is exported, and so restored, as its ContentForgotten, which no projector applies.

A target tenant that already holds events is refused unless `resume`: then every event whose id the target
holds is skipped (a resumed or repeated import appends each event once); an id the target holds for another
tenant is refused.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby
from typing import Any

from sqlalchemy import Connection, Engine

from domain.errors import ConcurrencyConflict, InvalidPayload
from domain.events import NewEvent, event_type, parse
from eventstore.append import append
from eventstore.restore import held_event_ids, tenant_has_events
from infra.wake import appended

BATCH = 500  # events per transaction
FIELDS = ("event_id", "tenant", "stream_id", "stream_version", "type", "schema_version", "data", "metadata",
          "occurred_at", "recorded_at")


class TargetNotEmpty(ConcurrencyConflict):
    """The target tenant already holds events and the import was not told to resume."""


@dataclass
class ImportReport:
    appended: int = 0
    skipped: int = 0  # already held by the target (resume)


def _as_time(value: Any) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def new_event(row: dict[str, Any]) -> NewEvent:
    """The event to append for one exported row (the keys of FIELDS); a row that is not one: InvalidPayload."""
    if not isinstance(row, dict):
        raise InvalidPayload("an exported event is a JSON object: is this an `events export` file?")
    missing = [f for f in FIELDS if f not in row]
    if missing:
        raise InvalidPayload(f"an exported event lacks {', '.join(missing)}: is this an `events export` file?")
    try:
        data = row["data"]
        if not isinstance(data, dict) or not isinstance(row["metadata"] or {}, dict):
            raise TypeError("data and metadata are JSON objects")
        current = event_type(str(row["type"])).version
        if int(row["schema_version"]) < current:  # as every reader sees it: upcast
            data = parse(row["type"], int(row["schema_version"]), data).model_dump(mode="json")
        return NewEvent(str(row["type"]), str(row["stream_id"]), data, occurred_at=_as_time(row["occurred_at"]),
                        expected_version=int(row["stream_version"]) - 1, event_id=_uuid(row["event_id"]),
                        metadata=dict(row["metadata"] or {}), recorded_at=_as_time(row["recorded_at"]))
    except (TypeError, ValueError) as exc:
        raise InvalidPayload(f"exported event {row.get('event_id')!r} is malformed: {exc}") from None


def _uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def _batches(rows: Iterable[dict[str, Any]]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """The rows cut into batches of one tenant each, in order."""
    for tenant, same in groupby(rows, key=lambda r: r["tenant"]):
        batch: list[dict[str, Any]] = []
        for row in same:
            batch.append(row)
            if len(batch) == BATCH:
                yield tenant, batch
                batch = []
        if batch:
            yield tenant, batch


def _import_batch(conn: Connection, tenant: str, batch: list[dict[str, Any]], resume: bool, checked: set[str],
                  report: ImportReport) -> int:
    """Append one batch (one tenant's) on `conn`; the number of events appended."""
    if tenant not in checked:
        checked.add(tenant)
        if not resume and tenant_has_events(conn, tenant):
            raise TargetNotEmpty(f"tenant {tenant!r} already holds events in the target store: import into"
                                 " an empty one, or resume an import (--resume; over HTTP, ?resume=true)")
    events = [new_event(r) for r in batch]
    held = held_event_ids(conn, [e.event_id for e in events])
    other = [str(i) for i, t in held.items() if t != tenant]
    if other:
        raise ConcurrencyConflict(f"event {other[0]} is held by another tenant in the target store")
    todo = [e for e in events if e.event_id not in held]
    try:
        append(conn, tenant, todo, {})
    except ConcurrencyConflict as exc:
        raise ConcurrencyConflict(f"the export does not continue the target's streams ({exc}): import a "
                                  "whole, unfiltered export of the tenant") from None
    report.appended += len(todo)
    report.skipped += len(events) - len(todo)
    return len(todo)


def check_whole(rows: Iterable[dict[str, Any]], progress: Callable[[int], None] | None = None) -> int:
    """A first pass over an export file before anything is written (the CLI reads it twice): every row an event,
    every stream's versions 1, 2, 3 … in order. A filtered or cut export is refused here, so a file of any size
    writes nothing when it is not whole (InvalidPayload); the number of rows."""
    last: dict[tuple[str, str], int] = {}
    n = 0
    for n, row in enumerate(rows, 1):
        event = new_event(row)
        key, version = (str(row["tenant"]), event.stream_id), int(row["stream_version"])
        if version != last.get(key, 0) + 1:
            raise InvalidPayload(f"exported event {row['event_id']} is version {version} of {event.stream_id!r}"
                                 f" after version {last.get(key, 0)}: import a whole, unfiltered export of the tenant")
        last[key] = version
        if progress is not None and n % BATCH == 0:
            progress(BATCH)
    if progress is not None and n % BATCH:
        progress(n % BATCH)
    return n


def import_events(engine: Engine, rows: Iterable[dict[str, Any]], *, resume: bool = False,
                  progress: Callable[[int], None] | None = None, whole: bool = False) -> ImportReport:
    """Append the exported `rows` (in the export's order) to the store behind `engine`; see the module doc.
    `whole`: in one transaction, so a refusal anywhere writes nothing (POST /v1/events/import, a bounded body);
    else a transaction per batch (the CLI's files of any size; a resumed import goes on where one stopped)."""
    report = ImportReport()
    checked: set[str] = set()
    if whole:
        with engine.begin() as conn:
            for tenant, batch in _batches(rows):
                _import_batch(conn, tenant, batch, resume, checked, report)
                if progress is not None:
                    progress(len(batch))
        if report.appended:
            appended(report.appended)
        return report
    for tenant, batch in _batches(rows):
        with engine.begin() as conn:
            done = _import_batch(conn, tenant, batch, resume, checked, report)
        if done:
            appended(done)
        if progress is not None:
            progress(len(batch))
    return report
