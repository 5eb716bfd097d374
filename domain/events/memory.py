"""The memory domain's events: a memory recorded, the governor's decisions on it, its lifecycle and consolidation."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, field_validator

from domain.events.base import (
    MAX_KIND_CHARS,
    MAX_REASON_CHARS,
    MAX_TAGS,
    Disposition,
    EventSchema,
    MemoryStatus,
    Route,
    ScopeText,
    SystemEvent,
    Tag,
    check_metadata,
)


class WriteSignals(EventSchema):
    surprise: float | None = Field(default=None, ge=0, le=1)
    decision: float | None = Field(default=None, ge=0, le=1)
    causal: float | None = Field(default=None, ge=0, le=1)
    effort: float | None = Field(default=None, ge=0, le=1)
    correction: bool | None = None


class MemoryRecorded(EventSchema):
    """A producer wrote a memory. Stream: memory-<memory_id>."""

    memory_id: uuid.UUID
    content: str = Field(min_length=1)
    kind: str = Field(default="observation", min_length=1, max_length=MAX_KIND_CHARS)
    agent_id: ScopeText | None = None
    project: ScopeText | None = None
    session_id: ScopeText | None = None
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)
    metadata: dict[str, Any] = Field(default_factory=dict)
    # Governance inputs (all optional): a must-keep write bypasses the salience gate; producer signals
    # in [0, 1] replace the text heuristics; `supersedes` names the memory this one corrects.
    must_keep: bool = False
    signals: WriteSignals | None = None
    supersedes: uuid.UUID | None = None
    reason: str | None = Field(default=None, max_length=MAX_REASON_CHARS)

    _metadata = field_validator("metadata")(check_metadata)


class MemoryAdmitted(SystemEvent):
    """System decision: the salience gate's verdict on a recorded memory, with every input it used."""

    memory_id: uuid.UUID
    disposition: Disposition
    salience: float
    kind: str
    route: Route
    reason: str
    inputs: dict[str, Any] = Field(default_factory=dict)


class MemoryReinforced(SystemEvent):
    """System decision: an observation repeated an existing memory's concept and reinforced it instead."""

    memory_id: uuid.UUID
    observation_id: uuid.UUID
    similarity: float
    merged_content: str
    confidence: float


class MemorySuperseded(SystemEvent):
    """A correction: `superseded_by` replaces `memory_id`; the old value stays in history."""

    memory_id: uuid.UUID
    superseded_by: uuid.UUID
    reason: str
    trigger: Literal["explicit", "correction_signal", "value_update"]
    similarity: float | None = None


class MemoryStatusChanged(SystemEvent):
    """System decision taken with a clock (decay, staging sweep, promotion): replays reproduce it exactly."""

    memory_id: uuid.UUID
    from_status: MemoryStatus
    to_status: MemoryStatus
    reason: str
    clock: datetime
    inputs: dict[str, Any] = Field(default_factory=dict)


class MemoriesMerged(SystemEvent):
    """System decision (consolidation): near-duplicates folded into `memory_id`; nothing is lost."""

    memory_id: uuid.UUID
    merged_ids: list[uuid.UUID] = Field(min_length=1)
    similarity: float
    merged_content: str
    clock: datetime


class EdgeAdjusted(SystemEvent):
    """System decision (consolidation): an association edge created, strengthened, weakened or capped."""

    source_id: uuid.UUID
    target_id: uuid.UUID
    edge_kind: Literal["semantic", "temporal", "causal", "entity", "hebbian"]
    weight: float
    reason: str
    clock: datetime


class ConsolidationCompleted(SystemEvent):
    """System: one sleep cycle ran with this clock and changed what its report says."""

    run_id: uuid.UUID
    tenant_scope: dict[str, Any] = Field(default_factory=dict)
    clock: datetime
    report: dict[str, Any] = Field(default_factory=dict)


def memory_stream(memory_id: uuid.UUID) -> str:
    return f"memory-{memory_id}"

