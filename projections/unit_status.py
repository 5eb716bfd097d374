"""The one handler of an item domain's status-changed event (the decay sweep's decisions: workers/reference_decay.py),
derived from the domain's declaration (readmodels/item_domains.py) and applied by the projector owning its units.

The unit the event's key fields name (its declared key columns) moves from from_status to to_status, only if it
is still in from_status (and, for code, only its held rows); status_ref_count takes the decision's input ref_count
(so a reference since is seen as one), last_reactivated_at the clock when it goes back to active, and, where the
domain keeps it, status_changed_at the clock. Then the unit's recorded-time version is snapshotted at the event's
position (readmodels/unit_versions.py). Every time comes from the event, so a rebuild gives the same rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, text

from domain.events import RecordedEvent
from readmodels.item_domains import ItemDomain

StatusHandler = Callable[[Connection, RecordedEvent, Any], None]


def status_changed(d: ItemDomain) -> StatusHandler:
    """The handler of `d`'s status-changed event."""
    key = " AND ".join(f"{c} = :{c}" for c in d.key_columns)
    update = text(f"""
    UPDATE {d.table} SET status = :to_status,{" status_changed_at = :clock," if d.stamps_status_change else ""}
        status_ref_count = coalesce(CAST(:ref_count AS integer), status_ref_count),
        last_reactivated_at = CASE WHEN :to_status = 'active' THEN :clock ELSE last_reactivated_at END
    WHERE tenant = :tenant AND {key} AND status = :from_status{f" AND {d.held(d.table)}" if d.held else ""}
    """)
    unit = " AND ".join(f"u.{c} = :{c}" for c in d.key_columns)

    def apply(conn: Connection, event: RecordedEvent, p: Any) -> None:
        keys = {c: getattr(p, c) for c in d.key_columns}
        ref_count = p.inputs.get("ref_count")
        conn.execute(update, {"tenant": event.tenant, **keys, "from_status": p.from_status, "to_status": p.to_status,
                              "clock": p.clock, "ref_count": ref_count if isinstance(ref_count, int) else None})
        d.versions.snapshot(conn, event.tenant, event.position, unit, keys)
    return apply


__all__ = ["StatusHandler", "status_changed"]
