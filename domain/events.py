"""Event types: declared once here as typed, versioned schemas, with upcasters for old versions.

Every event type has a current schema version. Events stored at an older version are upcast, one version
at a time, when read, so projectors only ever see the current shape.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from domain.errors import InvalidPayload, UnknownEventType

# The seven governed types (AWM / SwarmAI), plus the raw kinds producers write before classification.
MEMORY_TYPES = ("principle", "correction", "decision", "guideline", "pitfall", "process", "model")
MEMORY_KINDS = (*MEMORY_TYPES, "observation", "fact", "message")
# Input limits (README "HTTP API"): every producer string is bounded, so every row fits its indexes (a btree
# entry holds at most ~2.7 KB) and every payload can be serialised and read back.
MAX_TAGS = 64
MAX_TAG_CHARS = 128
MAX_SCOPE_CHARS = 128  # agent_id, project, session_id
MAX_KIND_CHARS = 64
MAX_REASON_CHARS = 2000
MAX_METADATA_BYTES = 16 * 1024  # as compact JSON
MAX_METADATA_KEY_CHARS = 128
MAX_METADATA_DEPTH = 16  # nested objects / arrays
MAX_STREAM_ID_CHARS = 200
MAX_IDEMPOTENCY_KEY_CHARS = 200
# occurred_at, in UTC: a sane range that PostgreSQL and every client can read back.
EARLIEST_OCCURRED = datetime(1900, 1, 1, tzinfo=UTC)
LATEST_OCCURRED = datetime(2201, 1, 1, tzinfo=UTC)
MAX_UTC_OFFSET = timedelta(hours=14)
SYSTEM_ACTOR = "system:governor"
Disposition = Literal["active", "staging", "discard"]
Route = Literal["agent", "knowledge", "project"]
MemoryStatus = Literal["pending", "active", "staging", "discarded", "superseded", "dormant", "archived", "merged"]


class EventSchema(BaseModel):
    """An event type's payload. The class is the handle: code appends `NewEvent.of(MemorySuperseded(...), ...)`
    and names a type by `MemorySuperseded.type_name()`, so "find usages" shows who appends and who applies it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def type_name(cls) -> str:
        """The type as the log stores it (events.type): the class's name."""
        return cls.__name__


class SystemEvent(EventSchema):
    """An event only the system appends: a decision taken with a clock or a model (by a `system:*` actor, with the
    inputs it used), the hit-log (recall itself), feedback (its endpoint, once validated against its recall).
    A producer's batch holding one is refused (services/append_events.py, workers/producer.py)."""


ScopeText = Annotated[str, StringConstraints(max_length=MAX_SCOPE_CHARS)]
Tag = Annotated[str, StringConstraints(max_length=MAX_TAG_CHARS)]


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of a JSON value, counted no further than `limit` + 1 (so a deep value costs no recursion)."""
    if limit < 0 or not isinstance(value, dict | list):
        return 0
    children = value.values() if isinstance(value, dict) else value
    return 1 + max((_depth(v, limit - 1) for v in children), default=0)


def _keys(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _keys(v)
    elif isinstance(value, list):
        for v in value:
            yield from _keys(v)


def check_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """A producer's metadata: at most MAX_METADATA_DEPTH levels, keys of at most MAX_METADATA_KEY_CHARS,
    at most MAX_METADATA_BYTES as JSON."""
    if _depth(metadata, MAX_METADATA_DEPTH) > MAX_METADATA_DEPTH:
        raise ValueError(f"nested deeper than {MAX_METADATA_DEPTH} levels")
    if any(len(k) > MAX_METADATA_KEY_CHARS for k in _keys(metadata)):
        raise ValueError(f"a key is longer than {MAX_METADATA_KEY_CHARS} characters")
    size = len(json.dumps(metadata, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"{size} bytes as JSON; the limit is {MAX_METADATA_BYTES}")
    return metadata


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON-like value, dict keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from strings(k)
            yield from strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from strings(v)


def has_lone_surrogate(value: Any) -> bool:
    """True when a string anywhere in `value` holds a lone UTF-16 surrogate (not valid Unicode text: PostgreSQL
    and UTF-8 cannot store it)."""
    return any(_LONE_SURROGATE.search(s) for s in strings(value))


def occurred_in_range(at: datetime) -> datetime:
    """`at` in UTC (a naive time is taken as UTC), refused outside [EARLIEST_OCCURRED, LATEST_OCCURRED) or with
    a UTC offset no place uses (beyond ±14:00)."""
    offset = at.utcoffset()
    if offset is not None and abs(offset) > MAX_UTC_OFFSET:
        raise InvalidPayload(f"occurred_at {at.isoformat()}: a UTC offset beyond ±14:00 is not a real one")
    try:
        utc = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    except (OverflowError, ValueError):
        utc = None
    if utc is None or not EARLIEST_OCCURRED <= utc < LATEST_OCCURRED:
        raise InvalidPayload(f"occurred_at {at.isoformat()} is outside {EARLIEST_OCCURRED.year}.."
                             f"{LATEST_OCCURRED.year - 1} (UTC)")
    return utc


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


class RecalledMemory(EventSchema):
    memory_id: uuid.UUID
    rank: int
    score: float


class RecallServed(SystemEvent):
    """The hit-log: one recall answered. Stream: recall-<recall_id>."""

    recall_id: uuid.UUID
    query: str
    k: int
    scope: dict[str, Any] = Field(default_factory=dict)
    results: list[RecalledMemory] = Field(default_factory=list)
    latency_ms: float
    # The funnel's explanation (clock, resolved query, per-stage timings/counts/knobs, abstention verdict,
    # per-result stage scores); absent from hit-log events written before the funnel.
    explanation: dict[str, Any] = Field(default_factory=dict)


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
    trigger: Literal["explicit", "correction_signal"]
    similarity: float | None = None


class MemoryStatusChanged(SystemEvent):
    """System decision taken with a clock (decay, staging sweep, promotion): replays reproduce it exactly."""

    memory_id: uuid.UUID
    from_status: MemoryStatus
    to_status: MemoryStatus
    reason: str
    clock: datetime
    inputs: dict[str, Any] = Field(default_factory=dict)


class FeedbackItem(EventSchema):
    memory_id: uuid.UUID
    verdict: Literal["used", "not_useful"]


class RecallFeedbackGiven(SystemEvent):
    """A client said which recalled memories it used. Stream: recall-<recall_id>."""

    recall_id: uuid.UUID
    items: list[FeedbackItem] = Field(min_length=1, max_length=100)


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

    @classmethod
    def of(cls, payload: EventSchema, stream_id: str, **fields: Any) -> NewEvent:
        """A typed event to append: `NewEvent.of(MemoryStatusChanged(...), memory_stream(memory_id), occurred_at=...)`
        (the payload was validated when it was built; its JSON form is what is stored)."""
        return cls(payload.type_name(), stream_id, payload.model_dump(mode="json"), **fields)

    def is_a(self, schema: type[EventSchema]) -> bool:
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

    def is_a(self, schema: type[EventSchema]) -> bool:
        return self.type == schema.type_name()


def memory_stream(memory_id: uuid.UUID) -> str:
    return f"memory-{memory_id}"


def recall_stream(recall_id: uuid.UUID) -> str:
    return f"recall-{recall_id}"
