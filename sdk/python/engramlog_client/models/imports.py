"""Imports: POST /v1/import/chat (a ChatGPT or Claude conversations.json, or OpenAI-style message JSONL)."""

from __future__ import annotations

from pydantic import Field

from engramlog_client.models.common import Response


class ChatImported(Response):
    conversations: int  # imported (with at least one message)
    empty: int  # without a message to import: skipped
    sessions_new: int
    messages: int
    messages_appended: int
    messages_present: int  # already in their sessions: nothing appended for them
    transcripts_written: int
    transcripts_unchanged: int
    memories_recorded: int  # user messages through the governor (remember=True)
    memories_present: int
    memories_skipped: int  # over the memory size limit (kept in the session only)
    last_position: int | None = None
    dry_run: bool = False
    session_ids: list[str] = Field(default_factory=list)  # each conversation's session (and transcript) id
