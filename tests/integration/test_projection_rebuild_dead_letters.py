"""A rebuild or verify replays what the live projection applied: an event it parked (moved past without applying,
projections/dead_letters.py) is left out of the replay too, instead of failing the rebuild on every try."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text

from domain.events import NewEvent, memory_stream
from eventstore.append import append
from projections.rebuild import rebuild, verify
from projections.registry import get_projector

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database


class Exploding:
    """The keyword projector, failing on one memory's event (as a bad event would fail it)."""

    def __init__(self, bad: uuid.UUID) -> None:
        self.inner, self.bad = get_projector("keyword"), str(bad)
        self.name, self.tables, self.types = self.inner.name, self.inner.tables, self.inner.types

    def apply(self, conn, events):
        if any(e.data.get("memory_id") == self.bad for e in events):
            raise ValueError("cannot apply this event")
        self.inner.apply(conn, events)


def test_an_event_the_live_projection_parked_is_left_out_of_rebuild_and_verify(engine, tenant):
    good, bad = uuid.uuid4(), uuid.uuid4()
    events = [NewEvent("MemoryRecorded", memory_stream(m), {
        "memory_id": str(m), "content": f"dead letter test {m}", "kind": "observation", "agent_id": None,
        "project": None, "session_id": None, "tags": [], "metadata": {}}, expected_version=0) for m in (good, bad)]
    with engine.begin() as conn:
        positions = append(conn, tenant, events, {"actor": "test"})
        conn.execute(text("""
            INSERT INTO projection_dead_letters (projection, position, tenant, tx_id, event_id, event_type, error,
                                                 attempts, status)
            SELECT 'keyword', position, tenant, tx_id, event_id, type, 'ValueError: cannot apply this event', 3,
                   'parked' FROM events WHERE position = :p"""), {"p": positions[1]})
    projector = Exploding(bad)
    rebuild(engine, projector, 500)  # raised on the parked event before
    with engine.connect() as conn:
        docs = set(conn.execute(text("SELECT memory_id FROM keyword_docs WHERE tenant = :t"), {"t": tenant}).scalars())
    assert docs == {good}
    assert verify(engine, projector, 500).identical
