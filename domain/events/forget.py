"""Forgetting a subject (docs/forget.md): the record that it was forgotten, and what a reader gets in place of an
event whose content was shredded.

Stream: forget-<forget_id> (one per forget). SubjectForgotten says who (the event's actor), what (the kind of
subject and a digest of its value, the counts erased), when (recorded_at) and why (reason); never the content,
nor the subject's value itself (an entity's name is the very thing forgotten).
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Literal

from pydantic import Field

from domain.events.base import MAX_REASON_CHARS, OperatorEvent, SystemEvent

ForgetKind = Literal["memory_id", "entity", "agent_id", "session_id", "path", "transcript_id", "repo"]
FORGET_KINDS: tuple[str, ...] = ("memory_id", "entity", "agent_id", "session_id", "path", "transcript_id", "repo")


def subject_digest(tenant: str, kind: str, value: str) -> str:
    """What the log keeps of a forgotten subject's value: enough to answer "was X forgotten?" by asking with X,
    not enough to read X back from the log."""
    return hashlib.sha256(f"{tenant}\x1f{kind}\x1f{value}".encode()).hexdigest()


class SubjectForgotten(OperatorEvent):
    """A subject's keys were destroyed: every sealed event of `streams` streams is unreadable from here on."""

    forget_id: uuid.UUID
    kind: ForgetKind
    subject_digest: str = Field(min_length=64, max_length=64)
    reason: str | None = Field(default=None, max_length=MAX_REASON_CHARS)
    streams: int = Field(ge=0)  # the subject's own streams (memories, sessions, documents, ...)
    dependent_streams: int = Field(ge=0)  # recalls and deep recalls whose records named them
    events: int = Field(ge=0)  # sealed events made unreadable
    keys: int = Field(ge=0)  # data keys destroyed
    projections: list[str] = Field(default_factory=list)  # read models rebuilt without the subject


class ContentForgotten(SystemEvent):
    """Never appended: what the event store answers in place of an event whose key is gone (eventstore/codec.py),
    so a projector's batch keeps its positions and no handler applies it."""

    original_type: str


def forget_stream(forget_id: uuid.UUID) -> str:
    return f"forget-{forget_id}"
