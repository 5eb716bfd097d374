"""Session messages over HTTP:

    POST /v1/sessions/{session_id}/messages                      one message (an OpenAI chat message, with
                                                                 optional message_id, tool_name, created_at, sent,
                                                                 checkpoint, metadata, agent_id, project) or a batch
                                                                 {"messages": [...], "agent_id"?, "project"?}
    POST /v1/sessions/{session_id}/messages/{message_id}/sent    mark a pending message sent
    GET  /v1/sessions                                            newest first, counts and date ranges, ?cursor= pages
    GET  /v1/sessions/{session_id}/messages                      in order, ?after_seq= pages (sent ones; pending too
                                                                 with ?include_unsent=true)
    GET  /v1/sessions/{session_id}/resume?budget_tokens=N        the resume context (from the log; no recall, no
                                                                 model, no Redis); ?format=text for the text alone

An OpenAI message's other fields (refusal, annotations, audio, ...) are accepted: empty ones are dropped, the
others kept in its metadata under "openai". Every read passes the tenant's privacy gate: an excluded session (by
id, agent or project) is a 404, like an unknown one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, ValidationError
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from api.context import Caller, caller, engine
from api.read_your_writes import reads
from api.schemas import AsOf
from api.sessions_schemas import BatchIn, BudgetTokens, MessageIn
from domain.errors import InvalidPayload, NotFound
from recall.domains.sessions import SessionsDomain, list_sessions, session_messages
from recall.privacy import policy_of
from recall.timeframe import TimeFrame, resolve_as_of
from services.sessions import append_messages, mark_sent, resume_context

router = APIRouter(prefix="/v1", tags=["sessions"])


class MessagesAppendedOut(BaseModel):
    session_id: str
    message_ids: list[str]  # in the append's order (generated where the request named none)
    position: int  # of the append's SessionMessagesAppended (a resent append: the first one's)


class MarkedSentOut(BaseModel):
    session_id: str
    message_id: str
    changed: bool  # False: it was sent already (nothing appended)
    position: int | None  # of the SessionMessageSent that marked it; appended sent: the session's newest event


class SessionListedOut(BaseModel):
    session_id: str
    agent_id: str | None
    project: str | None
    messages: int
    sent_messages: int
    first_at: datetime  # the earliest created_at of its messages
    last_at: datetime  # the latest
    last_position: int


class SessionsPageOut(BaseModel):
    sessions: list[SessionListedOut]  # newest (latest message) first
    next_cursor: str | None  # pass it back as `cursor` for the next page


class SessionMessageOut(BaseModel):
    session_id: str
    seq: int  # 1, 2, ... in append order
    message_id: str
    role: str
    content: str  # the message's text (content parts' text joined)
    tool_name: str | None
    name: str | None
    tool_call_id: str | None
    tool_calls: list[dict[str, Any]] | None
    created_at: datetime
    sent: bool
    checkpoint: bool
    metadata: dict[str, Any]


class MessagesPageOut(BaseModel):
    session_id: str
    messages: list[SessionMessageOut]
    next_after_seq: int | None  # pass it back as `after_seq` for the next page


class ResumeOut(BaseModel):
    session_id: str
    budget_tokens: int
    tokens: int  # the estimate of `context`'s size (characters / 4, rounded up)
    items: dict[str, int]  # items kept per section (checkpoint, conclusions, tool results, recent)
    dropped: int  # items left out to fit the budget
    last_position: int | None  # of the newest event of the session's log
    context: str


def _reasons(exc: ValidationError, prefix: str = "") -> str:
    return "; ".join(f"{prefix}{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors())


def _parse(body: dict[str, Any] | list[Any]) -> tuple[list[dict[str, Any]], str | None, str | None]:
    """(messages, agent_id, project) from a batch body, a bare list of messages (an agent forwarding its own chat
    message list as is) or a single message's."""
    if isinstance(body, list):
        body = {"messages": body}
    if "messages" in body:
        try:
            batch = BatchIn.model_validate(body)
        except ValidationError as exc:
            raise InvalidPayload(_reasons(exc)) from None
        raw, agent_id, project = batch.messages, batch.agent_id, batch.project
    else:
        single = dict(body)
        agent_id, project = single.pop("agent_id", None), single.pop("project", None)
        if not (agent_id is None or isinstance(agent_id, str)) or not (project is None or isinstance(project, str)):
            raise InvalidPayload("agent_id and project must be strings")
        raw = [single]
    messages = []
    for i, m in enumerate(raw):
        try:
            messages.append(MessageIn.model_validate(m).as_message())
        except ValidationError as exc:
            raise InvalidPayload(_reasons(exc, f"messages.{i}.")) from None
    return messages, agent_id, project


def _append(db: Engine, tenant: str, session_id: str, messages: list[dict[str, Any]], metadata: dict[str, Any],
            agent_id: str | None, project: str | None) -> Any:
    with db.connect() as conn:  # the policy in force now (read from the log): an excluded session is not written
        policy = policy_of(conn, tenant)
    return append_messages(db, tenant, session_id, messages, metadata, agent_id, project, policy)


@router.post("/sessions/{session_id}/messages", status_code=201, response_model=MessagesAppendedOut)
async def post_messages(session_id: str, body: Annotated[dict[str, Any] | list[Any], Body()],
                        who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)]) -> dict:
    messages, agent_id, project = _parse(body)
    done = await run_in_threadpool(_append, db, who.tenant, session_id, messages, who.metadata(), agent_id, project)
    return {"session_id": done.session_id, "message_ids": done.message_ids, "position": done.position}


@router.post("/sessions/{session_id}/messages/{message_id}/sent", response_model=MarkedSentOut)
def post_sent(session_id: str, message_id: str, who: Annotated[Caller, Depends(caller)],
              db: Annotated[Engine, Depends(engine)]) -> dict:
    with db.connect() as conn:
        policy = policy_of(conn, who.tenant)
    done = mark_sent(db, who.tenant, session_id, message_id, who.metadata(), policy)
    return {"session_id": done.session_id, "message_id": done.message_id, "changed": done.changed,
            "position": done.position}


@router.get("/sessions", response_model=SessionsPageOut, dependencies=[reads(SessionsDomain)])
def get_sessions(who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
                 agent_id: Annotated[str | None, Query(max_length=128)] = None,
                 project: Annotated[str | None, Query(max_length=128)] = None,
                 cursor: Annotated[str | None, Query(max_length=300)] = None,
                 limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict:
    with db.connect() as conn:
        sessions, next_cursor = list_sessions(conn, who.tenant, policy_of(conn, who.tenant), agent_id, project,
                                              cursor, limit)
    return {"sessions": sessions, "next_cursor": next_cursor}


@router.get("/sessions/{session_id}/messages", response_model=MessagesPageOut, dependencies=[reads(SessionsDomain)])
def get_messages(session_id: str, who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
                 after_seq: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
                 limit: Annotated[int, Query(ge=1, le=1000)] = 100, include_unsent: bool = False,
                 as_of: Annotated[AsOf, Query()] = None) -> dict:
    """The session's messages in order now, or `as_of` a log position or timestamp: those appended (and sent) by
    then (a session with none yet: 404)."""
    frame = TimeFrame(as_of=resolve_as_of(db, who.tenant, as_of))
    with db.connect() as conn:
        page = session_messages(conn, who.tenant, session_id, policy_of(conn, who.tenant), after_seq, limit,
                                include_unsent, frame)
    if page is None:
        raise NotFound(f"no session {session_id!r}")
    messages, next_after = page
    return {"session_id": session_id, "messages": messages, "next_after_seq": next_after}


@router.get("/sessions/{session_id}/resume", response_model=ResumeOut, dependencies=[reads(SessionsDomain)],
            responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}},
                             "description": "the resume context (?format=text: its text alone)"}})
def get_resume(session_id: str, who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
               budget_tokens: BudgetTokens = None,
               format: Annotated[str, Query(pattern="^(json|text)$")] = "json") -> dict | PlainTextResponse:
    with db.connect() as conn:
        log, ctx = resume_context(conn, who.tenant, session_id, budget_tokens, policy_of(conn, who.tenant))
    if format == "text":
        return PlainTextResponse(ctx.text)
    return {"session_id": session_id, "budget_tokens": ctx.budget_tokens, "tokens": ctx.tokens, "items": ctx.items,
            "dropped": ctx.dropped, "last_position": log.last_position, "context": ctx.text}
