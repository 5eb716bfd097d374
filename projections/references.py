"""The one hit-log reference counter: a recalled unit's ref_count and last_referenced_at (what the decay sweep,
workers/reference_decay.py, reads), counted by the projector that owns the unit's table.

Each domain is one `ReferencedUnits`: its hit-log domain, its table, the key columns that name a unit there and how
a handle names a key. Its `served` and `drilled` are the owning projector's RecallServed (each of the domain's
results) and ResultDrilled (a drill into the domain) handlers: a unit named n times by the event gets ref_count + n
and last_referenced_at = the event's time (never moved back). A handle naming no unit is skipped; a key no row holds
changes nothing. Tables are named unqualified, so a rebuild's search_path redirects them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from sqlalchemy import Connection, TextClause, text

from domain.events import RecallServed, RecordedEvent, ResultDrilled

Handle = dict[str, Any]


@dataclass(frozen=True)
class ReferencedUnits:
    domain: str  # the hit-log domain whose results name this table's units
    table: str
    key: tuple[tuple[str, str], ...]  # (column, SQL type) of each key column, in the order key_of answers them
    key_of: Callable[[str, Handle | None], tuple[str, ...] | None]  # (tenant, handle) → the unit's key, or None
    held: str = ""  # SQL on u: the rows a key names that count (code: not a replaced or removed symbol's)

    @cached_property
    def referenced(self) -> TextClause:
        columns = [c for c, _ in self.key]
        arrays = ", ".join(f"CAST(:k{i} AS {t}[])" for i, (_, t) in enumerate(self.key))
        match = " AND ".join([*(f"u.{c} = b.{c}" for c in columns), *([self.held] if self.held else [])])
        return text(f"""
        UPDATE {self.table} u SET ref_count = u.ref_count + b.n,
            last_referenced_at = greatest(u.last_referenced_at, CAST(:at AS timestamptz))
        FROM unnest({arrays}, CAST(:ns AS int[])) AS b({", ".join(columns)}, n)
        WHERE u.tenant = :tenant AND {match}
        """)

    def count(self, conn: Connection, tenant: str, handles: Sequence[Handle | None], at: datetime) -> None:
        counts = Counter(k for k in (self.key_of(tenant, h) for h in handles) if k is not None)
        if not counts:
            return
        keys = sorted(counts)
        columns = {f"k{i}": [k[i] for k in keys] for i in range(len(self.key))}
        conn.execute(self.referenced, {"tenant": tenant, **columns, "ns": [counts[k] for k in keys], "at": at})

    def served(self, conn: Connection, event: RecordedEvent, p: RecallServed) -> None:
        self.count(conn, event.tenant, [r.handle for r in p.results if r.domain == self.domain], event.recorded_at)

    def drilled(self, conn: Connection, event: RecordedEvent, p: ResultDrilled) -> None:
        if p.domain == self.domain:
            self.count(conn, event.tenant, [p.handle], event.recorded_at)


def string_key(*names: str) -> Callable[[str, Handle | None], tuple[str, ...] | None]:
    """A key read from a handle's string fields `names`, in that order (None when one is missing or no string)."""
    def key_of(tenant: str, handle: Handle | None) -> tuple[str, ...] | None:
        if not isinstance(handle, dict) or not all(isinstance(handle.get(n), str) for n in names):
            return None
        return tuple(handle[n] for n in names)
    return key_of


def uuid_key(unit_of: Callable[[str, Handle | None], Any]) -> Callable[[str, Handle | None], tuple[str, ...] | None]:
    """A one-column key: the id `unit_of` (tenant, handle) answers, or None."""
    def key_of(tenant: str, handle: Handle | None) -> tuple[str, ...] | None:
        unit = unit_of(tenant, handle)
        return None if unit is None else (str(unit),)
    return key_of


__all__ = ["ReferencedUnits", "string_key", "uuid_key"]
