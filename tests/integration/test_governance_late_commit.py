"""The governor's "unprojected" floor follows the projectors' (tx_id, position) order, not positions alone.

A transaction that takes its position first and commits last leaves its event below the checkpoint's position,
unapplied. The governor must still see that memory (an identical write reinforces it, never duplicates it),
however many events committed in between. No worker runs in this module: the projections are caught up by hand.
"""

from __future__ import annotations

import uuid

from sqlalchemy import text

from domain.events import MemoryAdmitted, MemoryRecorded, NewEvent, memory_stream, validate_payload

FILLER = 1500  # more than the old floor's margin (1,000 positions)


def _recorded_and_admitted(memory_id: uuid.UUID, content: str) -> list[NewEvent]:
    stream = memory_stream(memory_id)
    recorded = validate_payload(MemoryRecorded.__name__, {"memory_id": str(memory_id), "content": content,
                                                          "agent_id": "late"})
    admitted = validate_payload(MemoryAdmitted.__name__, {
        "memory_id": str(memory_id), "disposition": "active", "salience": 1.0, "kind": "observation",
        "route": "knowledge", "reason": "test: admitted by hand", "inputs": {}})
    return [NewEvent(MemoryRecorded.__name__, stream, recorded, expected_version=0),
            NewEvent(MemoryAdmitted.__name__, stream, admitted)]


def test_a_late_committed_memory_is_a_neighbour_however_far_the_checkpoint_moved(engine, tenant):
    from eventstore.append import append
    from infra.embedding import embed_cached, get_embedder
    from infra.settings import get_settings
    from projections.registry import PROJECTORS
    from projections.runner import catch_up
    from services.remember import MemoryInput, remember

    fact = "The staging cluster's etcd backups run at 03:15 UTC every night"
    embedder = get_embedder(get_settings().embedding.embedding_model)
    with engine.begin() as conn:  # as the governed write path leaves it: the text's embedding is cached
        embed_cached(conn, embedder, tenant, [fact])
    late_id = uuid.uuid4()
    other = f"{tenant}-filler"
    with engine.connect() as c_conn, engine.connect() as a_conn:
        c_tx = c_conn.begin()
        c_conn.execute(text("SELECT pg_current_xact_id()"))  # C's transaction id, older than A's
        a_tx = a_conn.begin()
        append(a_conn, tenant, _recorded_and_admitted(late_id, fact), {"actor": "test"})  # the lower position
        filler = [e for _ in range(FILLER) for e in _recorded_and_admitted(uuid.uuid4(), "filler text")][::2]
        append(c_conn, other, filler, {"actor": "test"})
        c_tx.commit()
        for name in ("memories", "vectors"):  # past the filler: A's event is below the checkpoint, unapplied
            catch_up(engine, PROJECTORS[name], 500)
        with engine.connect() as conn:
            checkpoint = conn.execute(text("SELECT min(position) FROM projection_checkpoints "
                                           "WHERE name IN ('memories', 'vectors')")).scalar_one()
            late_position = conn.execute(text("SELECT position FROM events WHERE tenant = :t AND stream_id = :s "
                                              "ORDER BY position LIMIT 1"),
                                         {"t": tenant, "s": memory_stream(late_id)}).scalar_one_or_none()
        assert late_position is None  # not committed yet
        a_tx.commit()
    with engine.connect() as conn:
        late_position = conn.execute(text("SELECT min(position) FROM events WHERE tenant = :t"),
                                     {"t": tenant}).scalar_one()
        in_read_model = conn.execute(text("SELECT count(*) FROM memories WHERE tenant = :t"),
                                     {"t": tenant}).scalar_one()
    assert checkpoint - late_position > 1000 and in_read_model == 0

    [again] = remember(engine, tenant, [MemoryInput(content=fact, agent_id="late")], {"source": "test"})
    assert again.reinforced == late_id, again
