"""A memory's status, as its own stream says (the log is ahead of the read model; a write decides on the log)."""

from __future__ import annotations

from collections.abc import Iterable

from domain.events import MemoryAdmitted, MemoryStatusChanged, MemorySuperseded, RecordedEvent

# The governor's disposition → the status a memory admitted with it has.
DISPOSITION_STATUS = {"active": "active", "staging": "staging", "discard": "discarded"}
# What recall answers by default (a dormant memory ranks lower through activation), what consolidation clusters
# and merges, and what the decay sweep may archive. Staging, superseded and archived ones only when asked for.
RECALLABLE = ("active", "dormant")
# What a governed write is compared with (a repeat of a staging memory reinforces and promotes it).
NEIGHBOUR_STATUSES = ("active", "staging", "dormant")


def status_from_stream(events: Iterable[RecordedEvent], memory_id: str) -> str | None:
    """The memory's status after its own stream's events (None before it is admitted). A merge is recorded on
    the kept memory's stream (MemoriesMerged), not on the merged ones': ask the log for it separately."""
    status: str | None = None
    for e in events:
        if e.is_a(MemoryAdmitted):
            status = DISPOSITION_STATUS[e.data["disposition"]]
        elif e.is_a(MemoryStatusChanged):
            status = e.data["to_status"]
        elif e.is_a(MemorySuperseded) and e.data.get("memory_id") == memory_id:
            status = "superseded"
    return status


__all__ = ["DISPOSITION_STATUS", "NEIGHBOUR_STATUSES", "RECALLABLE", "status_from_stream"]
