"""The one hit-log reference counter: a recalled unit's ref_count and last_referenced_at (what the decay sweep,
workers/reference_decay.py, reads), counted by the projector that owns the unit's table.

Each domain is one `ReferencedUnits` of its declaration (readmodels/item_domains.py: its hit-log domain, its table,
the key columns that name a unit there and how a handle names a key). Its `served` and `drilled` are the owning
projector's RecallServed (each of the domain's results) and ResultDrilled (a drill into the domain) handlers: a
unit named n times by the event gets ref_count + n and last_referenced_at = the event's time (never moved back).
A handle naming no unit is skipped; a key no row holds changes nothing. Tables are named unqualified, so a
rebuild's search_path redirects them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from sqlalchemy import Connection, TextClause, text

from domain.events import RecallServed, RecordedEvent, ResultDrilled
from readmodels.item_domains import Handle, ItemDomain


@dataclass(frozen=True)
class ReferencedUnits:
    of: ItemDomain  # its name, table, key, key_of and held rows

    @cached_property
    def referenced(self) -> TextClause:
        d = self.of
        columns = list(d.key_columns)
        arrays = ", ".join(f"CAST(:k{i} AS {t}[])" for i, (_, t) in enumerate(d.key))
        match = " AND ".join([*(f"u.{c} = b.{c}" for c in columns), *([d.held("u")] if d.held else [])])
        return text(f"""
        UPDATE {d.table} u SET ref_count = u.ref_count + b.n,
            last_referenced_at = greatest(u.last_referenced_at, CAST(:at AS timestamptz))
        FROM unnest({arrays}, CAST(:ns AS int[])) AS b({", ".join(columns)}, n)
        WHERE u.tenant = :tenant AND {match}
        """)

    def count(self, conn: Connection, tenant: str, handles: Sequence[Handle | None], at: datetime) -> None:
        counts = Counter(k for k in (self.of.key_of(tenant, h) for h in handles) if k is not None)
        if not counts:
            return
        keys = sorted(counts)
        columns = {f"k{i}": [k[i] for k in keys] for i in range(len(self.of.key))}
        conn.execute(self.referenced, {"tenant": tenant, **columns, "ns": [counts[k] for k in keys], "at": at})

    def served(self, conn: Connection, event: RecordedEvent, p: RecallServed) -> None:
        self.count(conn, event.tenant, [r.handle for r in p.results if r.domain == self.of.name], event.recorded_at)

    def drilled(self, conn: Connection, event: RecordedEvent, p: ResultDrilled) -> None:
        if p.domain == self.of.name:
            self.count(conn, event.tenant, [p.handle], event.recorded_at)


__all__ = ["ReferencedUnits"]
