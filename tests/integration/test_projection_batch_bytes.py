"""A projector's batch is bounded in bytes, not only in events (eventstore/read.py read_after's max_bytes,
settings.projections.projection_batch_bytes): large events wait for the next batch, a single one larger than the bound
is still a batch of one, and every event is read once, in order, however the batches are cut."""

from __future__ import annotations

import base64
import os
import uuid

from sqlalchemy import text

from domain.events import NewEvent, memory_stream
from eventstore.append import append
from eventstore.read import Checkpoint, read_after


def _large(engine, tenant: str, n: int, size: int) -> list[int]:
    events = [NewEvent("MemoryRecorded", memory_stream(m), {
        "memory_id": str(m), "content": base64.b64encode(os.urandom(size)).decode(), "kind": "observation",
        "agent_id": None, "project": None, "session_id": None, "tags": [], "metadata": {}}, expected_version=0)
        for m in (uuid.uuid4() for _ in range(n))]
    with engine.begin() as conn:
        return append(conn, tenant, events, {"actor": "test"})


def test_a_batch_stops_at_its_byte_bound_and_reads_every_event_once(engine, tenant) -> None:
    positions = _large(engine, tenant, 6, 60_000)
    with engine.connect() as conn:
        tx = conn.execute(text("SELECT tx_id::text::bigint FROM events WHERE position = :p"),
                          {"p": positions[0]}).scalar()
        sizes = conn.execute(text("SELECT pg_column_size(data) + pg_column_size(metadata) FROM events"
                                  " WHERE position = ANY(:p) ORDER BY position"), {"p": positions}).scalars().all()
        assert all(s > 60_000 for s in sizes), sizes  # incompressible: stored about as large as written
        bound = sizes[0] + sizes[1] + 1000  # two fit, the third starts past the bound... is still taken
        start, seen, batches = Checkpoint(tx, positions[0] - 1), [], []
        while True:
            batch = [e for e in read_after(conn, start, ["MemoryRecorded"], 500, max_bytes=bound)
                     if e.tenant == tenant]
            if not batch:
                break
            batches.append(len(batch))
            seen += [e.position for e in batch]
            start = Checkpoint(batch[-1].tx_id, batch[-1].position)
        assert seen == positions
        assert batches == [3, 3]  # each batch: the events that start within the bound (the last one crosses it)
        one = read_after(conn, Checkpoint(tx, positions[0] - 1), ["MemoryRecorded"], 500, max_bytes=1)
        assert [e.position for e in one] == positions[:1]  # larger than the bound alone: a batch of one
        everything = read_after(conn, Checkpoint(tx, positions[0] - 1), ["MemoryRecorded"], 500)
        assert [e.position for e in everything if e.tenant == tenant] == positions
