"""Transcripts over HTTP:

    PUT /v1/transcripts/{id}                  the verbatim transcript as the body (UTF-8: JSONL of messages or
                                              `[timestamp] ROLE: text` lines; ?format=jsonl|text, else detected):
                                              only the chunks new to its log are written; the answer says how
                                              many were written and reused, and `changed: false` when nothing was
    GET /v1/transcripts                       the tenant's transcripts (by id; ?after= pages): id, version,
                                              content_hash, counts (what `engramlog transcripts sync` compares)
    GET /v1/transcripts/{id}                  the verbatim text of the current version (text/plain, byte for byte
                                              the last put; its version and hash in X-Transcript-Version and
                                              X-Content-Hash)
    GET /v1/transcripts/{id}/lines?from=&to=  lines from..to (1-based, inclusive) of it, exactly
    GET /v1/transcripts/{id}/chunks/{ord}     the drill: the chunk at that position (?content_hash= a handle's:
                                              that exact chunk, even after the transcript grew); recall_id ties it
                                              to its recall

Every answer passes the tenant's privacy gate: a transcript whose id exclude_sessions names is a 404, like an
unknown one.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel
from sqlalchemy import Connection, Engine
from starlette.concurrency import run_in_threadpool

from api.context import Caller, caller, engine
from api.read_your_writes import reads
from api.schemas import AsOf
from domain.errors import InvalidPayload, NotFound
from domain.privacy import transcript_excluded
from recall.domains.transcripts import TranscriptsDomain, drill_chunk, list_transcripts
from recall.privacy import policy_of
from recall.timeframe import TimeFrame, resolve_as_of
from services.transcripts import check_id, decode, put_transcript, transcript_lines, transcript_text

router = APIRouter(prefix="/v1", tags=["transcripts"])


class TranscriptWrittenOut(BaseModel):
    transcript_id: str
    version: int
    content_hash: str
    format: str
    changed: bool  # False: the text was already the current version; nothing was appended
    chunks: int
    chunks_written: int
    chunks_reused: int
    lines: int
    turns: int
    bytes: int
    position: int | None


class TranscriptListedOut(BaseModel):
    transcript_id: str
    version: int
    content_hash: str
    format: str
    chunks: int
    lines: int
    turns: int
    bytes: int
    started_at: datetime | None
    ended_at: datetime | None
    updated_at: datetime


class TranscriptsListOut(BaseModel):
    transcripts: list[TranscriptListedOut]
    next_after: str | None


class LinesOut(BaseModel):
    transcript_id: str
    version: int
    first: int
    last: int
    lines_total: int
    text: str


class ChunkOut(BaseModel):
    transcript_id: str
    ord: int
    content_hash: str
    version: int
    text: str
    lines: list[int]
    turns: list[int]
    started_at: datetime | None
    ended_at: datetime | None
    status: str


class ChunkDrillOut(BaseModel):
    chunk: ChunkOut
    drill_id: uuid.UUID
    position: int


def _visible(conn: Connection, tenant: str, transcript_id: str) -> None:
    check_id(transcript_id)
    if transcript_excluded(policy_of(conn, tenant), transcript_id):
        raise NotFound(f"no transcript {transcript_id!r}")


def _writable(db: Engine, tenant: str, transcript_id: str) -> None:
    """A transcript id the policy excludes is refused whether a transcript has it or not (nothing written): its
    answer (version, changed, chunks reused) would tell what the log holds under it."""
    with db.connect() as conn:
        if transcript_excluded(policy_of(conn, tenant), transcript_id):
            raise InvalidPayload(f"transcript {transcript_id!r}: its id is excluded by the tenant's privacy policy "
                                 "(exclude_sessions); it is not written")


@router.put("/transcripts/{transcript_id}", response_model=TranscriptWrittenOut)
async def put(transcript_id: str, request: Request, who: Annotated[Caller, Depends(caller)],
              db: Annotated[Engine, Depends(engine)],
              format: Annotated[str | None, Query(max_length=16)] = None) -> TranscriptWrittenOut:  # noqa: A002
    check_id(transcript_id)
    text = decode(await request.body())
    await run_in_threadpool(_writable, db, who.tenant, transcript_id)
    done = await run_in_threadpool(put_transcript, db, who.tenant, transcript_id, text, who.metadata(), format)
    return TranscriptWrittenOut(**done.__dict__)


@router.get("/transcripts", response_model=TranscriptsListOut, dependencies=[reads(TranscriptsDomain)])
def get_list(who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
             after: Annotated[str, Query(max_length=256)] = "",
             limit: Annotated[int, Query(ge=1, le=10_000)] = 1000) -> TranscriptsListOut:
    with db.connect() as conn:
        rows, next_after = list_transcripts(conn, who.tenant, policy_of(conn, who.tenant), after, limit)
    return TranscriptsListOut(transcripts=[TranscriptListedOut(**r) for r in rows], next_after=next_after)


@router.get("/transcripts/{transcript_id}", response_class=Response, dependencies=[reads(TranscriptsDomain)])
def get_text(transcript_id: str, who: Annotated[Caller, Depends(caller)],
             db: Annotated[Engine, Depends(engine)], as_of: Annotated[AsOf, Query()] = None) -> Response:
    """The transcript's text now, or `as_of` a log position or timestamp (the version it had then; none yet: 404)."""
    position = resolve_as_of(db, who.tenant, as_of)
    with db.connect() as conn:
        _visible(conn, who.tenant, transcript_id)
        t = transcript_text(conn, who.tenant, transcript_id, position)
    return Response(t.text.encode("utf-8"), media_type="text/plain; charset=utf-8",
                    headers={"X-Transcript-Version": str(t.version), "X-Content-Hash": t.content_hash,
                             "X-Transcript-Format": t.format})


@router.get("/transcripts/{transcript_id}/lines", response_model=LinesOut, dependencies=[reads(TranscriptsDomain)])
def get_lines(transcript_id: str, who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
              first: Annotated[int, Query(alias="from", ge=1, le=2**31 - 1)] = 1,
              last: Annotated[int | None, Query(alias="to", ge=1, le=2**31 - 1)] = None,
              as_of: Annotated[AsOf, Query()] = None) -> LinesOut:
    position = resolve_as_of(db, who.tenant, as_of)
    with db.connect() as conn:
        _visible(conn, who.tenant, transcript_id)
        s = transcript_lines(conn, who.tenant, transcript_id, first, last, position)
    return LinesOut(**s.__dict__)


@router.get("/transcripts/{transcript_id}/chunks/{ord_}", response_model=ChunkDrillOut,
            dependencies=[reads(TranscriptsDomain)])
def get_chunk(transcript_id: str, ord_: int, who: Annotated[Caller, Depends(caller)],
              db: Annotated[Engine, Depends(engine)],
              content_hash: Annotated[str | None, Query(max_length=64)] = None,
              recall_id: uuid.UUID | None = None, as_of: Annotated[AsOf, Query()] = None) -> ChunkDrillOut:
    check_id(transcript_id)
    frame = TimeFrame(as_of=resolve_as_of(db, who.tenant, as_of))
    with db.connect() as conn:
        policy = policy_of(conn, who.tenant)  # the drill answers an excluded transcript's chunk as an unknown one
    done = drill_chunk(db, who.tenant, transcript_id, ord_, policy, who.metadata(), content_hash, recall_id, frame)
    return ChunkDrillOut(chunk=ChunkOut(**done.chunk), drill_id=done.drill_id, position=done.position)


__all__ = ["router"]
