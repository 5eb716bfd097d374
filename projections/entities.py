"""The `memory_entities` read model: which named entities each memory talks about, for the graph walk's entity
edges (two memories of one agent that talk about the same entity are associated).

An entity is what `domain.entities.entities` finds in the memory's text (lower-cased), without the utterance's
speaker prefix: "Melanie: Oliver hid his bone" talks about Oliver, and who said it is not what it is about
(every utterance of a speaker would otherwise be linked to every other). A memory whose content changes
(MemoryReinforced's or MemoriesMerged's merged content) has its entities replaced. The rule is pure, so a
rebuild gives the same rows. How common an entity is decides whether the walk follows it (recall/funnel/graph.py).
The agent of a memory whose content changes is its MemoryRecorded's, read from the log (never from another
projection's table).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, text

from domain.entities import entities, speaker
from domain.events import (
    EventSchema,
    MemoriesMerged,
    MemoryRecorded,
    MemoryReinforced,
    RecordedEvent,
    memory_stream,
)
from eventstore.stream import stream_event
from projections.base import OneByOne, apply_in_order, types_of

_INSERT = text("""
INSERT INTO memory_entities (tenant, memory_id, entity, agent_id)
SELECT * FROM unnest(CAST(:tenants AS text[]), CAST(:ids AS uuid[]), CAST(:entities AS text[]),
                     CAST(:agents AS text[]))
ON CONFLICT DO NOTHING
""")
_DROP = text("DELETE FROM memory_entities WHERE tenant = :tenant AND memory_id = :memory_id")


def talks_about(content: str) -> list[str]:
    """The entities a memory's text talks about, lower-cased, in order of first appearance."""
    who = speaker(content)  # extracted from the whole text: after "Name: " a capital is not sentence grammar
    who_name = who.lower() if who is not None else None
    found: dict[str, None] = {}
    for entity in entities(content):
        name = entity.lower()
        if name != who_name:
            found.setdefault(name)
    return list(found)


def _agent(conn: Connection, tenant: str, memory_id: uuid.UUID) -> str | None:
    first = stream_event(conn, tenant, memory_stream(memory_id), 1)  # the memory's recording: its stream's first
    if first is None or not first.is_a(MemoryRecorded):
        return None
    recorded = first.payload()  # upcast: an old event keeps its scope
    return recorded.agent_id if isinstance(recorded, MemoryRecorded) else None


class _Run:
    """Entity rows of the batch's recorded memories, inserted in one statement."""

    def __init__(self) -> None:
        self.rows: dict[str, list[object]] = {"tenants": [], "ids": [], "entities": [], "agents": []}

    def add(self, tenant: str, memory_id: object, agent_id: str | None, content: str) -> None:
        for entity in talks_about(content):
            for key, value in (("tenants", tenant), ("ids", memory_id), ("entities", entity), ("agents", agent_id)):
                self.rows[key].append(value)

    def recorded(self, conn: Connection, event: RecordedEvent, p: MemoryRecorded) -> None:
        self.add(event.tenant, p.memory_id, p.agent_id, p.content)

    def flush(self, conn: Connection) -> None:
        if self.rows["ids"]:
            conn.execute(_INSERT, self.rows)
            for values in self.rows.values():
                values.clear()


def _content_changed(conn: Connection, event: RecordedEvent, p: MemoryReinforced | MemoriesMerged) -> None:
    # The replaced rows may have been in this batch: apply_in_order wrote them before this deletes them.
    conn.execute(_DROP, {"tenant": event.tenant, "memory_id": p.memory_id})
    replaced = _Run()
    replaced.add(event.tenant, p.memory_id, _agent(conn, event.tenant, p.memory_id), p.merged_content)
    replaced.flush(conn)


# Event class → how it is applied: into the batch's rows, or on its own (after those rows are written).
_IN_RUN: dict[type[EventSchema], Callable[[_Run, Connection, RecordedEvent, Any], None]] = {
    MemoryRecorded: _Run.recorded}
_ONE_BY_ONE: OneByOne = {MemoryReinforced: _content_changed, MemoriesMerged: _content_changed}


class EntitiesProjector:
    name = "entities"
    tables = ("memory_entities",)
    handlers = {**_IN_RUN, **_ONE_BY_ONE}
    types = types_of(handlers)

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        apply_in_order(conn, events, _ONE_BY_ONE, _IN_RUN, _Run())
