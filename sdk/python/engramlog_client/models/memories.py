"""Memories: POST /v1/memories (and /batch), GET /v1/memories/{id}, supersede, history."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, TypedDict

from engramlog_client.models.common import Request, Response


class Signals(Request):
    """A producer's own salience signals, each in [0, 1]; `correction` marks a write that corrects another."""

    surprise: float | None = None
    decision: float | None = None
    causal: float | None = None
    effort: float | None = None
    correction: bool | None = None


class MemoryFields(TypedDict, total=False):
    """The optional fields of a memory write (keyword arguments of `remember`)."""

    kind: str
    agent_id: str | None
    project: str | None
    session_id: str | None
    tags: list[str]
    metadata: dict[str, Any]
    occurred_at: datetime | str | None
    idempotency_key: str | None
    must_keep: bool | None  # None: not sent (the server's default, False), as MemoryIn
    signals: Signals | dict[str, Any] | None
    supersedes: uuid.UUID | str | None
    reason: str | None


class MemoryIn(Request):
    content: str
    kind: str | None = None
    agent_id: str | None = None
    project: str | None = None
    session_id: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    occurred_at: datetime | None = None
    idempotency_key: str | None = None
    must_keep: bool | None = None
    signals: Signals | None = None
    supersedes: uuid.UUID | None = None
    reason: str | None = None


class SupersedeFields(TypedDict, total=False):
    kind: str
    agent_id: str | None
    project: str | None
    session_id: str | None
    tags: list[str]
    metadata: dict[str, Any]
    occurred_at: datetime | str | None
    idempotency_key: str | None
    signals: Signals | dict[str, Any] | None


class SupersedeIn(Request):
    content: str
    reason: str
    kind: str | None = None
    agent_id: str | None = None
    project: str | None = None
    session_id: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    occurred_at: datetime | None = None
    idempotency_key: str | None = None
    signals: Signals | None = None


class Remembered(Response):
    """A write's answer: the memory's id, the log position, and the governor's decision."""

    memory_id: uuid.UUID
    position: int
    disposition: str | None = None  # active | staging | discard
    salience: float | None = None
    memory_type: str | None = None
    route: str | None = None
    reinforced: uuid.UUID | None = None  # the memory this write reinforced instead of being added
    supersedes: uuid.UUID | None = None


class RememberedMany(Response):
    memories: list[Remembered]


class Superseded(Response):
    memory_id: uuid.UUID
    position: int
    supersedes: uuid.UUID


class Memory(Response):
    """One memory as the read model holds it, with its governance state."""

    memory_id: uuid.UUID
    content: str
    kind: str
    agent_id: str | None = None
    project: str | None = None
    session_id: str | None = None
    tags: list[str] = []
    metadata: dict[str, Any] = {}
    occurred_at: datetime
    recorded_at: datetime
    status: str
    position: int
    memory_type: str | None = None
    salience: float | None = None
    route: str | None = None
    confidence: float | None = None
    reinforced_count: int | None = None
    supersedes: uuid.UUID | None = None
    superseded_by: uuid.UUID | None = None
    merged_into: uuid.UUID | None = None
    status_changed_at: datetime | None = None


class HistoryMemory(Response):
    memory_id: uuid.UUID
    content: str
    status: str
    memory_type: str | None = None
    recorded_at: datetime
    position: int


class HistoryStep(Response):
    """One supersede: `from_id` was replaced by `to_id`, when, why (reason, trigger) and by whom (actor)."""

    from_id: uuid.UUID
    to_id: uuid.UUID
    at: datetime
    reason: str
    trigger: str
    actor: str | None = None
    position: int


class History(Response):
    memory_id: uuid.UUID
    current: uuid.UUID  # the newest memory of the chain: the value recall returns
    chain: list[HistoryMemory]  # oldest → newest
    transitions: list[HistoryStep]  # oldest → newest
