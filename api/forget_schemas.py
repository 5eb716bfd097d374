"""POST /v1/forget: the request (one subject) and the receipt (docs/forget.md)."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import Field, model_validator

from api.schemas import Body
from domain.events import FORGET_KINDS, MAX_REASON_CHARS

_NAME = Field(default=None, min_length=1, max_length=512)


class ForgetIn(Body):
    """Exactly one subject: a memory, an entity (every memory, session, document, transcript and code file whose text
    names it), an agent, a session, a document path, a transcript or a repository. `dry_run`: answer what would
    be erased, erase nothing."""

    memory_id: uuid.UUID | None = None
    entity: str | None = _NAME
    agent_id: str | None = _NAME
    session_id: str | None = _NAME
    path: str | None = _NAME
    transcript_id: str | None = _NAME
    repo: str | None = _NAME
    dry_run: bool = False
    reason: str | None = Field(default=None, max_length=MAX_REASON_CHARS)  # why (kept in the log: no content)

    @model_validator(mode="after")
    def _one_subject(self) -> ForgetIn:
        named = [k for k in FORGET_KINDS if getattr(self, k) is not None]
        if len(named) != 1:
            raise ValueError(f"name exactly one subject of {', '.join(FORGET_KINDS)} (got {len(named)})")
        for k in named + ["reason"]:
            value = getattr(self, k)
            if isinstance(value, str) and "\x00" in value:
                raise ValueError(f"{k} must not contain NUL (\\u0000)")
        if self.entity is not None and not self.entity.strip():
            raise ValueError("entity must name someone (not only spaces)")
        return self

    def subject(self) -> tuple[str, str]:
        [kind] = [k for k in FORGET_KINDS if getattr(self, k) is not None]
        return kind, str(getattr(self, kind)).strip() if kind == "entity" else str(getattr(self, kind))


class ForgetOut(Body):
    """What was (or, dry run, would be) erased: counts and stream ids, never content."""

    forget_id: str | None  # None on a dry run
    position: int | None  # the SubjectForgotten's position (read with min_position from it)
    dry_run: bool
    kind: str
    streams: dict[str, int]  # the subject's own streams, by kind (memories, sessions, documents, ...)
    stream_ids: list[str]
    dependent_streams: int  # recall and deep-recall records that named it
    events: int
    sealed_events: int  # made unreadable by destroying their keys
    unsealed_events: int  # written before encryption: not erasable by a key (docs/forget.md)
    keys: int
    projections: list[str]  # read models rebuilt without it (dry run: that would be)
    embeddings_uncached: int
    dead_letters: int
    seconds: float
    shred_seconds: float  # of which the transaction (the rest: the rebuilds)

    @classmethod
    def of(cls, receipt: dict[str, Any]) -> ForgetOut:
        return cls(**receipt)
