"""Importing what agents already have, over HTTP:

    POST /v1/import/chat?format=auto|chatgpt|claude|jsonl[&agent_id=][&project=][&remember=true][&dry_run=true]
        the export as the body, as the file is (ChatGPT's or Claude's conversations.json, or OpenAI-style JSONL:
        domain/imports/), at most 32 MiB (services/chat_import.py MAX_IMPORT_BYTES; `engramlog import chat` sends
        a larger one in batches); each conversation becomes a session and a transcript, and with remember=true each
        user message a memory through the governor. All checked before anything is written: a bad export is a 4xx
        with the reason and writes nothing. A re-import appends nothing; the answer counts what was appended and
        what was already there. dry_run=true: checked and counted, nothing written.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from api.context import Caller, caller, engine
from domain.errors import ContentTooLarge, InvalidPayload
from domain.events.base import MAX_SCOPE_CHARS
from domain.imports.chat_formats import parse_chat
from domain.imports.conversations import ChatFormatError, Conversation
from recall.privacy import policy_of
from services.chat_import import MAX_IMPORT_BYTES, ImportSummary, import_chats

router = APIRouter(prefix="/v1/import", tags=["import"])


class ChatImportedOut(BaseModel):
    conversations: int
    empty: int
    sessions_new: int
    messages: int
    messages_appended: int
    messages_present: int
    transcripts_written: int
    transcripts_unchanged: int
    memories_recorded: int
    memories_present: int
    memories_skipped: int
    last_position: int | None
    dry_run: bool
    session_ids: list[str]


def _import(db: Engine, tenant: str, conversations: list[Conversation], metadata: dict[str, Any],
            agent_id: str | None, project: str | None, with_memories: bool, dry_run: bool) -> ImportSummary:
    with db.connect() as conn:  # the policy in force now: an excluded session is not written
        policy = policy_of(conn, tenant)
    return import_chats(db, tenant, conversations, metadata, policy=policy, agent_id=agent_id, project=project,
                        with_memories=with_memories, dry_run=dry_run)


@router.post("/chat", response_model=ChatImportedOut)
async def post_chat(request: Request, who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
                    format: Annotated[str, Query(pattern="^(auto|chatgpt|claude|jsonl)$")] = "auto",  # noqa: A002
                    agent_id: Annotated[str | None, Query(min_length=1, max_length=MAX_SCOPE_CHARS)] = None,
                    project: Annotated[str | None, Query(min_length=1, max_length=MAX_SCOPE_CHARS)] = None,
                    remember: bool = False, dry_run: bool = False) -> ChatImportedOut:
    raw = await request.body()
    if len(raw) > MAX_IMPORT_BYTES:
        raise ContentTooLarge(f"the export is {len(raw)} bytes; one import holds at most {MAX_IMPORT_BYTES} "
                              "(`engramlog import chat` sends a larger one in batches)")
    try:
        conversations = await run_in_threadpool(parse_chat, raw, format)
    except ChatFormatError as exc:
        raise InvalidPayload(str(exc)) from None
    done = await run_in_threadpool(_import, db, who.tenant, conversations, who.metadata(), agent_id, project,
                                   remember, dry_run)
    return ChatImportedOut(**done.__dict__)


__all__ = ["router"]
