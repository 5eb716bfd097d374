"""The registry of event types (name, schema version, upcasters) and the events as they are appended and read.

Adding an event type: declare its class in its domain's module and add one `_current(...)` line here.
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from domain.errors import InvalidPayload, UnknownEventType
from domain.events.base import EventSchema, OperatorEvent, SystemEvent
from domain.events.code import CodeFilePut, CodeFileRemoved, CodeSymbolStatusChanged
from domain.events.deep_recall import BlindSpotRegistered, DeepRecallServed, DeepRecallStored
from domain.events.forget import ContentForgotten, SubjectForgotten
from domain.events.hitlog import RecallFeedbackGiven, RecallServed, ResultDrilled
from domain.events.knowledge import DocumentPut, DocumentRetired, SectionStatusChanged
from domain.events.memory import (
    ConsolidationCompleted,
    EdgeAdjusted,
    MemoriesMerged,
    MemoryAdmitted,
    MemoryRecorded,
    MemoryReinforced,
    MemoryStatusChanged,
    MemorySuperseded,
)
from domain.events.privacy import PrivacyPolicySet
from domain.events.sessions import SessionMessagesAppended, SessionMessageSent, SessionMessageStatusChanged
from domain.events.transcripts import TranscriptChunksPut, TranscriptChunkStatusChanged

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class EventType:
    name: str
    version: int
    schema: type[EventSchema]
    # upcasters[v] turns a payload at version v into version v + 1
    upcasters: dict[int, Upcaster] = field(default_factory=dict)

    def upcast(self, version: int, data: dict[str, Any]) -> dict[str, Any]:
        if version > self.version or version < 1:
            raise InvalidPayload(f"{self.name} has no schema version {version} (current is {self.version})")
        while version < self.version:
            data = self.upcasters[version](data)
            version += 1
        return data


def _memory_recorded_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    # v1 carried the text as `text` and the scope as one nested object.
    data = dict(data)
    if "text" not in data:
        raise InvalidPayload("MemoryRecorded (schema version 1): text: Field required")
    data["content"] = data.pop("text")
    scope = data.pop("scope", None) or {}
    if not isinstance(scope, dict):
        raise InvalidPayload("MemoryRecorded (schema version 1): scope: must be a JSON object")
    for key in ("agent_id", "project", "session_id"):
        data.setdefault(key, scope.get(key))
    return data


def _current(schema: type[EventSchema], version: int = 1, upcasters: dict[int, Upcaster] | None = None) -> EventType:
    return EventType(schema.type_name(), version, schema, upcasters or {})


EVENT_TYPES: dict[str, EventType] = {
    t.name: t
    for t in (
        _current(MemoryRecorded, 2, {1: _memory_recorded_v1_to_v2}),
        _current(RecallServed),
        _current(MemoryAdmitted),
        _current(MemoryReinforced),
        _current(MemorySuperseded),
        _current(MemoryStatusChanged),
        _current(RecallFeedbackGiven),
        _current(MemoriesMerged),
        _current(EdgeAdjusted),
        _current(ConsolidationCompleted),
        _current(ResultDrilled),
        _current(DocumentPut),
        _current(DocumentRetired),
        _current(SectionStatusChanged),
        _current(PrivacyPolicySet),
        _current(CodeFilePut),
        _current(CodeFileRemoved),
        _current(SessionMessagesAppended),
        _current(SessionMessageSent),
        _current(DeepRecallServed),
        _current(DeepRecallStored),
        _current(BlindSpotRegistered),
        _current(TranscriptChunksPut),
        _current(SessionMessageStatusChanged),
        _current(TranscriptChunkStatusChanged),
        _current(CodeSymbolStatusChanged),
        _current(SubjectForgotten),
        _current(ContentForgotten),
    )
}
TypeRef = str | type[EventSchema]  # a stored type name, or the event class


def _name(of: TypeRef) -> str:
    return of if isinstance(of, str) else of.type_name()


def event_type(of: TypeRef) -> EventType:
    name = _name(of)
    try:
        return EVENT_TYPES[name]
    except KeyError:
        known = ", ".join(sorted(EVENT_TYPES))
        raise UnknownEventType(f"unknown event type {name!r}; known types: {known}") from None


def is_system_event(name: str) -> bool:
    """True for a type only the system appends (a SystemEvent); False for a producer's type or an unknown name."""
    etype = EVENT_TYPES.get(name)
    return etype is not None and issubclass(etype.schema, SystemEvent)


def is_operator_event(name: str) -> bool:
    """True for a type only an operator appends, through its own route (an OperatorEvent)."""
    etype = EVENT_TYPES.get(name)
    return etype is not None and issubclass(etype.schema, OperatorEvent)


def validate_payload(of: TypeRef, data: Any, schema_version: int | None = None) -> dict[str, Any]:
    """Upcast and validate a payload; answer it in the current schema's JSON form."""
    etype = event_type(of)
    name = etype.name
    if not isinstance(data, dict):
        raise InvalidPayload(f"{name}: data must be a JSON object")
    data = etype.upcast(etype.version if schema_version is None else schema_version, data)
    try:
        model = etype.schema.model_validate(data)
    except ValidationError as exc:
        reasons = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'data'}: {e['msg']}" for e in exc.errors())
        raise InvalidPayload(f"{name}: {reasons}") from None
    return model.model_dump(mode="json")


def parse(of: TypeRef, schema_version: int, data: dict[str, Any]) -> EventSchema:
    etype = event_type(of)
    return etype.schema.model_validate(etype.upcast(schema_version, data))


@dataclass(frozen=True)
class NewEvent:
    """An event about to be appended. `data` is already validated at the current schema version."""

    type: str
    stream_id: str
    data: dict[str, Any]
    occurred_at: datetime | None = None
    expected_version: int | None = None
    idempotency_key: str | None = None
    event_id: uuid.UUID = field(default_factory=uuid.uuid4)
    # None: the batch's metadata. Set: this event's own (a system decision names its actor and causation).
    metadata: dict[str, Any] | None = None
    # None: the commit's clock. Set only by a restore (`engramlog import log`), which keeps the exported log's times.
    recorded_at: datetime | None = None

    @classmethod
    def of(cls, payload: EventSchema, stream_id: str, **fields: Any) -> NewEvent:
        """A typed event to append: `NewEvent.of(MemoryStatusChanged(...), memory_stream(memory_id), occurred_at=...)`
        (the payload was validated when it was built; its JSON form is what is stored)."""
        return cls(payload.type_name(), stream_id, payload.model_dump(mode="json"), **fields)

    def is_a(self, schema: builtins.type[EventSchema]) -> bool:  # builtins: the field `type` shadows it here
        return self.type == schema.type_name()

    @property
    def schema_version(self) -> int:
        return event_type(self.type).version


@dataclass(frozen=True)
class RecordedEvent:
    position: int
    event_id: uuid.UUID
    tenant: str
    stream_id: str
    stream_version: int
    type: str
    schema_version: int
    data: dict[str, Any]
    metadata: dict[str, Any]
    occurred_at: datetime
    recorded_at: datetime
    tx_id: int

    def payload(self) -> EventSchema:
        return parse(self.type, self.schema_version, self.data)

    def is_a(self, schema: builtins.type[EventSchema]) -> bool:  # builtins: the field `type` shadows it here
        return self.type == schema.type_name()

