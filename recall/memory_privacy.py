"""Which memories a privacy policy hides, decided on each one's MemoryRecorded in the log (its agent, project,
session and tags): recall/privacy.py's gate and recall/event_privacy.py's per-type rule both ask it. A module of its
own, on the log alone, so the per-type rule (which the privacy projector applies for the analytics views,
projections/subject_visibility.py) reaches it without recall/privacy.py's reads of the read models."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection

from domain.events import MemoryRecorded, memory_stream
from domain.privacy import PrivacyPolicy, memory_excluded
from eventstore.stream import read_streams

_MEMORY_STREAM = "memory-"


def hidden_memories(conn: Connection, tenant: str, policy: PrivacyPolicy, ids: Iterable[str | uuid.UUID]) -> set[str]:
    """Those of `ids` (as lower-case strings) that are memories of the tenant the policy excludes, decided on
    each one's MemoryRecorded (the first on its stream)."""
    if policy.empty:
        return set()
    streams = sorted({memory_stream(uuid.UUID(str(i))) for i in ids})
    recorded: dict[str, dict[str, Any]] = {}
    for event in read_streams(conn, tenant, streams, (MemoryRecorded,)):
        recorded.setdefault(event.stream_id, event.data)  # oldest first: a memory is recorded once
    return {stream[len(_MEMORY_STREAM):] for stream, data in recorded.items() if memory_excluded(policy, data)}


__all__ = ["hidden_memories"]
