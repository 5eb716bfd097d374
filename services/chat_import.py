"""Import chat exports (domain/imports/): each conversation becomes a session and a transcript, and on request
(`remember`) each user message a memory through the governor's default write path (services/remember.py).

Idempotent: the ids are the export's own (domain/imports/conversations.py), the session's messages are read from
its log first (services/sessions.py session_outline: no projection to wait for) and only the ones it lacks are
appended (each append keyed by its message ids, so a racing retry appends nothing either); the transcript is the
conversation rendered the same way each time, so an unchanged one appends nothing (services/transcripts.py); a
remembered message is keyed by (session, message), and one already recorded is not sent again. A re-import of the
same export appends nothing.

Every conversation is checked (privacy policy, the session's agent and project, each append's payload, the
transcript's id and size) before anything is written: a refused import writes nothing. The writes then go
conversation by conversation, each in its own transactions; an import stopped half way (a crash, a lost
connection) is finished by running it again. Messages a session already holds keep their place: a conversation
that grew gets its new messages appended after them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from domain.errors import ContentTooLarge, InvalidPayload
from domain.imports.conversations import Conversation
from domain.privacy import PrivacyPolicy, session_excluded, transcript_excluded
from domain.transcripts.ids import MAX_TRANSCRIPT_BYTES
from eventstore.append import existing_positions
from infra.settings import get_settings
from services.remember import MemoryInput, remember
from services.sessions import append_messages, check_append, session_outline
from services.transcripts import check_id, put_transcript

MAX_IMPORT_BYTES = 32 * 1024 * 1024  # one HTTP import's body (the CLI sends a large export in batches)


@dataclass
class ImportSummary:
    conversations: int = 0  # imported (with at least one message)
    empty: int = 0  # conversations without a message to import: skipped
    sessions_new: int = 0
    messages: int = 0
    messages_appended: int = 0
    messages_present: int = 0  # already in their session (nothing appended for them)
    transcripts_written: int = 0
    transcripts_unchanged: int = 0
    memories_recorded: int = 0  # user messages sent through the governor (--remember)
    memories_present: int = 0  # recorded by an earlier import
    memories_skipped: int = 0  # user messages over the memory content limit (kept in the session only)
    last_position: int | None = None  # of the last event appended (read-your-writes)
    dry_run: bool = False
    session_ids: list[str] = field(default_factory=list)

    def add(self, other: ImportSummary) -> None:
        for name in ("conversations", "empty", "sessions_new", "messages", "messages_appended", "messages_present",
                     "transcripts_written", "transcripts_unchanged", "memories_recorded", "memories_present",
                     "memories_skipped"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.last_position = max((p for p in (self.last_position, other.last_position) if p is not None),
                                 default=None)
        self.session_ids.extend(other.session_ids)


@dataclass(frozen=True)
class _Planned:
    conversation: Conversation
    new: list[dict[str, Any]]  # the messages its session lacks, in order
    present: int
    new_session: bool
    memories: list[MemoryInput]  # user messages to record
    memories_present: int
    memories_skipped: int


def _memory_key(session_id: str, message_id: str) -> str:
    digest = hashlib.sha256(json.dumps([session_id, message_id]).encode("utf-8", "surrogatepass")).hexdigest()
    return f"import-chat:{digest}"


def _chunks(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def _plan(engine: Engine, tenant: str, c: Conversation, agent_id: str | None, project: str | None,
          policy: PrivacyPolicy, with_memories: bool) -> _Planned:
    sid = c.session_id
    where = f"conversation {c.conversation_id!r} (session {sid!r})"
    settings = get_settings()
    check_id(sid)
    if session_excluded(policy, sid, agent_id, project) or transcript_excluded(policy, sid):
        raise InvalidPayload(f"{where}: excluded by the tenant's privacy policy (exclude_sessions, exclude_agents, "
                             "exclude_projects); nothing is imported")
    if len(c.transcript().encode("utf-8")) > MAX_TRANSCRIPT_BYTES:
        raise ContentTooLarge(f"{where}: its transcript is over the limit of {MAX_TRANSCRIPT_BYTES} bytes")
    with engine.connect() as conn:
        outline = session_outline(conn, tenant, sid)
        held = {line.message_id for line in outline.lines}
        new = [m.as_session_message() for m in c.messages if m.message_id not in held]
        if new and outline.lines:
            if session_excluded(policy, sid, outline.agent_id, outline.project):
                raise InvalidPayload(f"{where}: excluded by the tenant's privacy policy; nothing is imported")
            for key, value, theirs in (("agent_id", agent_id, outline.agent_id), ("project", project,
                                                                                  outline.project)):
                if value is not None and value != theirs:
                    raise InvalidPayload(f"{where}: the session belongs to another {key} ({theirs!r}); import "
                                         f"without --{key.replace('_', '-')} or with that one")
        for batch in _chunks(new, settings.max_batch):
            try:
                check_append(sid, batch, agent_id, project)
            except (InvalidPayload, ContentTooLarge) as exc:
                raise type(exc)(f"{where}: {exc}") from None
        memories: list[MemoryInput] = []
        skipped = present = 0
        if with_memories:
            users = [m for m in c.messages if m.role == "user"]
            keys = [_memory_key(sid, m.message_id) for m in users]
            known = existing_positions(conn, tenant, keys) if keys else {}
            present = len(known)
            for m, key in zip(users, keys, strict=True):
                if key in known:
                    continue
                if len(m.content) > settings.max_content_chars:
                    skipped += 1
                    continue
                memories.append(MemoryInput(
                    content=m.content, kind="message", agent_id=agent_id or outline.agent_id,
                    project=project or outline.project, session_id=sid, occurred_at=m.created_at,
                    idempotency_key=key, metadata={"import": {"source": c.source, "message_id": m.message_id}}))
    return _Planned(c, new, len(c.messages) - len(new), not outline.lines, memories, present, skipped)


def import_chats(engine: Engine, tenant: str, conversations: Sequence[Conversation], metadata: dict[str, Any], *,
                 policy: PrivacyPolicy, agent_id: str | None = None, project: str | None = None,
                 with_memories: bool = False, dry_run: bool = False,
                 progress: Callable[[Conversation], None] | None = None) -> ImportSummary:
    """Import the conversations (all checked first; dry_run: checked and counted, nothing written)."""
    summary = ImportSummary(dry_run=dry_run)
    planned = []
    for c in conversations:
        if not c.messages:
            summary.empty += 1
            continue
        planned.append(_plan(engine, tenant, c, agent_id, project, policy, with_memories))
    settings = get_settings()
    for p in planned:
        c = p.conversation
        summary.conversations += 1
        summary.session_ids.append(c.session_id)
        summary.sessions_new += p.new_session
        summary.messages += len(c.messages)
        summary.messages_appended += len(p.new)
        summary.messages_present += p.present
        summary.memories_present += p.memories_present
        summary.memories_skipped += p.memories_skipped
        summary.memories_recorded += len(p.memories)
        if not dry_run:
            _write(engine, tenant, p, metadata, agent_id, project, policy, settings.max_batch, summary)
        if progress is not None:
            progress(c)
    return summary


def _write(engine: Engine, tenant: str, p: _Planned, metadata: dict[str, Any], agent_id: str | None,
           project: str | None, policy: PrivacyPolicy, max_batch: int, summary: ImportSummary) -> None:
    c = p.conversation
    positions: list[int] = []
    for batch in _chunks(p.new, max_batch):
        positions.append(append_messages(engine, tenant, c.session_id, batch, metadata, agent_id, project,
                                         policy).position)
    put = put_transcript(engine, tenant, c.session_id, c.transcript(), metadata, "jsonl")
    if put.changed:
        summary.transcripts_written += 1
        positions.append(put.position or 0)
    else:
        summary.transcripts_unchanged += 1
    for memories in _chunks(p.memories, max_batch):
        positions.extend(r.position for r in remember(engine, tenant, memories, metadata))
    if positions:
        summary.last_position = max(summary.last_position or 0, *positions)


__all__ = ["MAX_IMPORT_BYTES", "ImportSummary", "import_chats"]
