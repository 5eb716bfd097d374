"""What every event type is built on: the payload base classes, producer input limits and their validators.

An event type is a class (the handle): its payload schema, declared in the module of its domain (memory.py,
hitlog.py, ...), registered once in registry.py with its schema version and upcasters.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints

from domain.errors import InvalidPayload

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
# The statuses the decay sweep moves a session message, transcript chunk or code symbol between.
DecayStatus = Literal["active", "dormant", "archived"]


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


class OperatorEvent(EventSchema):
    """An event only an operator key appends, through its own route (a tenant's privacy policy: PUT
    /v1/policy/privacy). The generic append paths (POST /v1/events, the ingest queue) refuse it from everyone,
    so the route's operator check is the only way in (services/append_events.py, workers/producer.py)."""


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

