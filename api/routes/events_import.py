"""POST /v1/events/import: an operator restores an export of the log (GET /v1/events/export's JSON lines, as
`engramlog import log` does a file) into this store, through services/import_log.py with the CLI's checks.

The body is the export as it was answered, at most 32 MiB (MAX_IMPORT_BYTES, as POST /v1/import/chat): one JSON
object a line, each of the operator's own tenant (`engramlog export --format jsonl`'s file too). It is imported in
one transaction, so a refusal writes nothing: a body that is not such an export (422), a tenant that already holds
events unless `resume` (409), a filtered or incomplete export that does not continue the target's streams (409),
an event id another tenant holds (409).
The answer counts the events appended and those already held (a resumed import skips them)."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import BaseModel
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from api.context import Caller, caller, engine
from domain.errors import ContentTooLarge, InvalidPayload
from services.chat_import import MAX_IMPORT_BYTES
from services.import_log import import_events

router = APIRouter(prefix="/v1/events", tags=["events"])


class LogImportedOut(BaseModel):
    appended: int
    already_held: int


def export_rows(raw: bytes, tenant: str) -> list[dict[str, Any]]:
    """The body's events, one JSON object a line, each of `tenant` (an operator restores its own tenant): the HTTP
    export's lines name no tenant, `engramlog export`'s do."""
    rows: list[dict[str, Any]] = []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidPayload("the export is JSON lines in UTF-8 (GET /v1/events/export's answer)") from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidPayload(f"line {n}: not a JSON line ({exc.msg})") from None
        if not isinstance(row, dict):
            raise InvalidPayload(f"line {n}: an exported event is a JSON object")
        if row.setdefault("tenant", tenant) != tenant:  # the HTTP export's lines name none: the key's own
            raise InvalidPayload(f"line {n}: the event is of tenant {row['tenant']!r}, not this key's "
                                 f"{tenant!r}: an operator imports its own tenant's export")
        rows.append(row)
    if not rows:
        raise InvalidPayload("the export holds no event")
    return rows


@router.post("/import", response_model=LogImportedOut)
async def import_log(request: Request, who: Annotated[Caller, Depends(caller)],
                     db: Annotated[Engine, Depends(engine)], resume: bool = False) -> LogImportedOut:
    if not who.operator:
        raise HTTPException(403, "importing a log needs an operator key (ENGRAMLOG_OPERATOR_KEYS)")
    raw = await request.body()
    if len(raw) > MAX_IMPORT_BYTES:
        raise ContentTooLarge(f"the export is {len(raw)} bytes; one import holds at most {MAX_IMPORT_BYTES} "
                              "(`engramlog import log FILE` restores a larger one)")
    rows = export_rows(raw, who.tenant)
    report = await run_in_threadpool(import_events, db, rows, resume=resume, whole=True)
    return LogImportedOut(appended=report.appended, already_held=report.skipped)


__all__ = ["router"]
