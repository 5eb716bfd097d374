"""Import chat exports (domain/imports/): each conversation becomes a session and a transcript, and on request
(`remember`) each user message a memory through the governor's default write path (services/remember.py).

Idempotent: the ids are the export's own (domain/imports/conversations.py), and only what the log lacks is
appended. A conversation whose appends are all in the log under their idempotency keys (services/sessions.py
append_key: the conversation's ids, cut as this import cuts them) is held whole, found by one indexed lookup for
many conversations; any other one's session is read from its log (session_outline: no projection to wait for) and
only the messages it lacks are appended (each append keyed by its ids, so a racing retry appends nothing either).
The transcript, the conversation rendered the same way each time, is put before the session's appends (so a
session held whole has its transcript), and an unchanged one appends nothing (services/transcripts.py); a
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
from collections.abc import Sequence
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
from services.sessions import append_key, append_messages, check_append, session_outline
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
    held: bool  # every message already in the session, found by its appends' keys: nothing to write


_LOOKUP = 1000  # idempotency keys looked up per query


def _memory_key(session_id: str, message_id: str) -> str:
    digest = hashlib.sha256(json.dumps([session_id, message_id]).encode("utf-8", "surrogatepass")).hexdigest()
    return f"import-chat:{digest}"


def _chunks(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def _whole_keys(c: Conversation, max_batch: int) -> list[str]:
    """The keys this import appends the conversation's messages under, when its session lacks them all."""
    return [append_key(c.session_id, [m.message_id for m in batch]) for batch in _chunks(c.messages, max_batch)]


def _known(engine: Engine, tenant: str, keys: Sequence[str]) -> set[str]:
    with engine.connect() as conn:
        return {k for chunk in _chunks(keys, _LOOKUP) for k in existing_positions(conn, tenant, list(chunk))}


def _plan(engine: Engine, tenant: str, c: Conversation, agent_id: str | None, project: str | None,
          policy: PrivacyPolicy, with_memories: bool, known: set[str]) -> _Planned:
    sid = c.session_id
    where = f"conversation {c.conversation_id!r} (session {sid!r})"
    settings = get_settings()
    check_id(sid)
    if session_excluded(policy, sid, agent_id, project) or transcript_excluded(policy, sid):
        raise InvalidPayload(f"{where}: excluded by the tenant's privacy policy (exclude_sessions, exclude_agents, "
                             "exclude_projects); nothing is imported")
    if len(c.transcript().encode("utf-8")) > MAX_TRANSCRIPT_BYTES:
        raise ContentTooLarge(f"{where}: its transcript is over the limit of {MAX_TRANSCRIPT_BYTES} bytes")
    held = all(k in known for k in _whole_keys(c, settings.limits.max_batch))
    owner: tuple[str | None, str | None] = (None, None)
    new: list[dict[str, Any]] = []
    new_session = False
    if not held:
        with engine.connect() as conn:
            outline = session_outline(conn, tenant, sid)
        owner, new_session = (outline.agent_id, outline.project), not outline.lines
        present_ids = {line.message_id for line in outline.lines}
        new = [m.as_session_message() for m in c.messages if m.message_id not in present_ids]
        if new and outline.lines:
            if session_excluded(policy, sid, *owner):
                raise InvalidPayload(f"{where}: excluded by the tenant's privacy policy; nothing is imported")
            for key, value, theirs in (("agent_id", agent_id, owner[0]), ("project", project, owner[1])):
                if value is not None and value != theirs:
                    raise InvalidPayload(f"{where}: the session belongs to another {key} ({theirs!r}); import "
                                         f"without --{key.replace('_', '-')} or with that one")
        for batch in _chunks(new, settings.limits.max_batch):
            try:
                check_append(sid, batch, agent_id, project)
            except (InvalidPayload, ContentTooLarge) as exc:
                raise type(exc)(f"{where}: {exc}") from None
    memories: list[MemoryInput] = []
    skipped = present = 0
    for m in (m for m in c.messages if with_memories and m.role == "user"):
        key = _memory_key(sid, m.message_id)
        if key in known:
            present += 1
        elif len(m.content) > settings.limits.max_content_chars:
            skipped += 1
        else:
            memories.append(MemoryInput(
                content=m.content, kind="message", agent_id=agent_id or owner[0], project=project or owner[1],
                session_id=sid, occurred_at=m.created_at, idempotency_key=key,
                metadata={"import": {"source": c.source, "message_id": m.message_id}}))
    return _Planned(c, new, len(c.messages) - len(new), new_session, memories, present, skipped, held)


def import_chats(engine: Engine, tenant: str, conversations: Sequence[Conversation], metadata: dict[str, Any], *,
                 policy: PrivacyPolicy, agent_id: str | None = None, project: str | None = None,
                 with_memories: bool = False, dry_run: bool = False) -> ImportSummary:
    """Import the conversations (all checked first; dry_run: checked and counted, nothing written). The memories
    go last, across conversations in governed batches of up to ENGRAMLOG_MAX_BATCH (one transaction, one
    embedding batch each), once every session and transcript is written."""
    summary = ImportSummary(dry_run=dry_run)
    settings = get_settings()
    full = [c for c in conversations if c.messages]
    summary.empty = len(conversations) - len(full)
    keys = [k for c in full for k in _whole_keys(c, settings.limits.max_batch)]
    if with_memories:
        keys += [_memory_key(c.session_id, m.message_id) for c in full for m in c.messages if m.role == "user"]
    known = _known(engine, tenant, keys)
    planned = [_plan(engine, tenant, c, agent_id, project, policy, with_memories, known) for c in full]
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
            _write(engine, tenant, p, metadata, agent_id, project, policy, settings.limits.max_batch, summary)
    memories = [m for p in planned for m in p.memories]
    for batch in _chunks(memories if not dry_run else [], settings.limits.max_batch):
        _advance(summary, [r.position for r in remember(engine, tenant, batch, metadata)])
    return summary


def _advance(summary: ImportSummary, positions: Sequence[int]) -> None:
    if positions:
        summary.last_position = max(summary.last_position or 0, *positions)


def _write(engine: Engine, tenant: str, p: _Planned, metadata: dict[str, Any], agent_id: str | None,
           project: str | None, policy: PrivacyPolicy, max_batch: int, summary: ImportSummary) -> None:
    c = p.conversation
    positions: list[int] = []
    if p.held:
        summary.transcripts_unchanged += 1  # put before the appends that hold the session whole
    else:
        put = put_transcript(engine, tenant, c.session_id, c.transcript(), metadata, "jsonl")
        if put.changed:
            summary.transcripts_written += 1
            positions.append(put.position or 0)
        else:
            summary.transcripts_unchanged += 1
    for batch in _chunks(p.new, max_batch):
        positions.append(append_messages(engine, tenant, c.session_id, batch, metadata, agent_id, project,
                                         policy).position)
    _advance(summary, positions)


__all__ = ["MAX_IMPORT_BYTES", "ImportSummary", "import_chats"]
