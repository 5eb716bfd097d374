"""A recall's two times, as bi-temporal stores keep them (docs/recall.md, "Valid time and recorded time"):

- valid time, `since` / `until`: when a thing happened or was said (a memory's `occurred_at`, a session message's
  `created_at`, a transcript chunk's span). A filter, inclusive at both ends, applied in every leg's SQL, so the k
  results are k results inside the range; a domain with no valid time (knowledge, code) answers none under it.
- recorded time, `as_of`: what the store held at a log position (a timestamp is resolved to the tenant's last
  position recorded at or before it: eventstore/positions.py). The memories are read from their versions
  (memory_versions, migration 0025) valid at that position, not from the current read model; their activity from
  memory_activity_versions (0026); the recall's clock is the position's recorded time (`clock_of`). Knowledge
  sections, transcript chunks and session messages likewise from their versions (0029: `units`, and each leg's
  status filter, recall/hybrid.py `HybridLeg.framed`); code symbols from theirs (0030), their source from the text
  their file was put with (code_file_texts).

`TimeFrame()` is the current store with no date filter: every SQL fragment below is then the plain current read.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine

from domain.errors import InvalidPayload
from eventstore.positions import position_at, recorded_at, settled
from infra.db import reading
from readmodels.memories import MEMORY_COLUMNS
from readmodels.unit_versions import UnitVersions
from recall.consistency import refuse_beyond_head


@dataclass(frozen=True)
class TimeFrame:
    since: datetime | None = None  # valid time, inclusive
    until: datetime | None = None  # valid time, inclusive
    as_of: int | None = None  # recorded time: a log position (resolved from a timestamp by the caller)

    def check(self) -> None:
        for name, value in (("since", self.since), ("until", self.until)):
            if value is not None and value.utcoffset() is None:
                raise InvalidPayload(f"{name} must be a timestamp with a timezone (e.g. 2025-05-01T00:00:00Z)")
        if self.since is not None and self.until is not None and self.since > self.until:
            raise InvalidPayload(f"since ({self.since.isoformat()}) is after until ({self.until.isoformat()})")
        if self.as_of is not None and self.as_of < 0:
            raise InvalidPayload("as_of must be a log position >= 0 or a timestamp")

    @property
    def dated(self) -> bool:
        """Whether a valid-time filter is set."""
        return self.since is not None or self.until is not None

    @property
    def current(self) -> bool:
        return self.as_of is None

    def params(self) -> dict[str, object]:
        """The bind parameters every fragment below uses (only those set)."""
        out: dict[str, object] = {}
        if self.since is not None:
            out["tf_since"] = self.since
        if self.until is not None:
            out["tf_until"] = self.until
        if self.as_of is not None:
            out["tf_as_of"] = self.as_of
        return out

    def valid_sql(self, column: str) -> str:
        """`column` (a timestamp) inside [since, until], as SQL (" AND ..." prefixed; "" when undated)."""
        out = ""
        if self.since is not None:
            out += f" AND {column} >= :tf_since"
        if self.until is not None:
            out += f" AND {column} <= :tf_until"
        return out

    def span_sql(self, start: str, end: str) -> str:
        """An item spanning [start, end] (end NULL: the instant start) overlaps [since, until]; an item with no
        start has no valid time and is out of every dated range."""
        if not self.dated:
            return ""
        out = f" AND {start} IS NOT NULL"
        if self.since is not None:
            out += f" AND coalesce({end}, {start}) >= :tf_since"
        if self.until is not None:
            out += f" AND {start} <= :tf_until"
        return out

    def memories(self) -> str:
        """The relation memories are read from, aliasable: the current read model, or each memory's version valid
        at the as_of position (at most one a memory)."""
        if self.as_of is None:
            return "memories"
        return (f"(SELECT tenant, {MEMORY_COLUMNS} FROM memory_versions"
                " WHERE valid_from <= :tf_as_of AND (valid_to IS NULL OR valid_to > :tf_as_of))")

    def activity(self) -> str:
        """The relation memories' activity (the ACT-R and feedback inputs) is read from, aliasable: the current read
        model, or each memory's activity version valid at the as_of position (memory_activity_versions, 0026)."""
        if self.as_of is None:
            return "memory_activity"
        return ("(SELECT tenant, memory_id, access_count, last_access_at, used_count, not_useful_count"
                " FROM memory_activity_versions"
                " WHERE valid_from <= :tf_as_of AND (valid_to IS NULL OR valid_to > :tf_as_of))")

    def units(self, versions: UnitVersions) -> str:
        """The relation a hybrid domain's units (sections, chunks, messages, code symbols) are read from, aliasable:
        the current read model, or each unit as it stood at the as_of position (readmodels/unit_versions.py)."""
        return versions.units if self.as_of is None else versions.as_of()

    def memory_status_filter(self, alias: str) -> str:
        """SQL on `alias` (a row with tenant and memory_id): its memory, as of the frame, is in one of :statuses and
        inside the valid-time range. A scalar subquery on the key (recall/vector.py says why not a join)."""
        if self.current and not self.dated:
            return (f"(SELECT m.status FROM memories m WHERE m.tenant = {alias}.tenant"
                    f" AND m.memory_id = {alias}.memory_id) = ANY(:statuses)")
        return (f"(SELECT m.status FROM {self.memories()} m WHERE m.tenant = {alias}.tenant"
                f" AND m.memory_id = {alias}.memory_id{self.valid_sql('m.occurred_at')}) = ANY(:statuses)")

    def times(self) -> tuple[str, ...]:
        """The times this frame asks for (a domain that keeps none of them answers nothing under it)."""
        return (*(("valid",) if self.dated else ()), *(("recorded",) if self.as_of is not None else ()))

    def explain(self) -> dict[str, object] | None:
        if self.current and not self.dated:
            return None
        return {"since": self.since.isoformat() if self.since else None,
                "until": self.until.isoformat() if self.until else None, "as_of": self.as_of}


NOW = TimeFrame()


def clock_of(engine: Engine, tenant: str, frame: TimeFrame, now: datetime) -> datetime:
    """The clock a recall's ages are measured against (activation, edge decay, the query's time words): `now`, or
    under as_of the recorded time of the position (its tenant's last event at or before it: eventstore/positions.py),
    read from the log, so the same as_of always gives the same clock; `now` when the tenant had recorded nothing."""
    if frame.as_of is None:
        return now
    with reading(engine) as conn:
        return recorded_at(conn, tenant, frame.as_of) or now


def resolve_as_of(engine: Engine, tenant: str, as_of: int | datetime | None) -> int | None:
    """A requested as_of as a log position: a timestamp is the tenant's last position recorded at or before it; a
    position beyond the tenant's head is refused (422), as min_position is; either is settled to the end of its
    transaction (eventstore/positions.py)."""
    if as_of is None:
        return None
    if isinstance(as_of, datetime):
        if as_of.utcoffset() is None:
            raise InvalidPayload("as_of must be a log position or a timestamp with a timezone")
        with reading(engine) as conn:
            return position_at(conn, tenant, as_of)
    refuse_beyond_head(engine, as_of, "as_of", tenant)
    with reading(engine) as conn:
        return settled(conn, tenant, as_of)


__all__ = ["NOW", "TimeFrame", "clock_of", "resolve_as_of"]
