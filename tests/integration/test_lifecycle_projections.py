"""The activity and edges read models on real PostgreSQL: access statistics from the hit-log, reinforcements and
feedback; Hebbian edges behind the validation gate; causal edges from supersedes; consolidation's edge
adjustments; read-time decay; and a rebuild that reproduces both tables exactly."""

from __future__ import annotations

import math
import uuid
from datetime import timedelta

import pytest
from lifecycle_support import feedback, record, reinforced, rows, served, sync
from sqlalchemy import text

from domain.events import NewEvent, validate_payload
from eventstore.append import append

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database


def activity(engine, tenant: str) -> dict[uuid.UUID, dict]:
    with engine.connect() as conn:
        return {r.memory_id: dict(r._mapping) for r in conn.execute(
            text("SELECT * FROM memory_activity WHERE tenant = :t"), {"t": tenant})}


def edges(engine, tenant: str) -> dict[tuple, tuple]:
    with engine.connect() as conn:
        return {(r.source_id, r.target_id, r.kind): (r.weight, r.updated_at) for r in conn.execute(
            text("SELECT * FROM memory_edges WHERE tenant = :t"), {"t": tenant})}


def recorded_at(engine, tenant: str, stream: str, type_: str = "RecallServed") -> object:
    with engine.connect() as conn:
        return conn.execute(text("""SELECT max(recorded_at) FROM events
                                    WHERE tenant = :t AND stream_id = :s AND type = :type"""),
                            {"t": tenant, "s": stream, "type": type_}).scalar_one()


def key(a: uuid.UUID, b: uuid.UUID, kind: str = "hebbian") -> tuple:
    return (*sorted((a, b), key=str), kind)


def test_activity_counts_hits_reinforcements_and_feedback(engine, tenant) -> None:
    from projections.activity import activity_for

    m = record(engine, tenant, [f"activity memory {i}" for i in range(5)])
    first = served(engine, tenant, [m[0], m[1], m[2]])
    second = served(engine, tenant, [m[0]])
    reinforced(engine, tenant, m[3], "activity memory 3")
    feedback(engine, tenant, first, used=[m[0], m[1]], not_useful=[m[2]])
    sync(engine)

    a = activity(engine, tenant)
    assert {k: v["access_count"] for k, v in a.items()} == {m[0]: 2, m[1]: 1, m[2]: 1, m[3]: 1}
    assert a[m[0]]["last_access_at"] == recorded_at(engine, tenant, f"recall-{second}")
    assert a[m[1]]["last_access_at"] == recorded_at(engine, tenant, f"recall-{first}")
    assert a[m[3]]["last_access_at"] == recorded_at(engine, tenant, f"memory-{m[3]}", "MemoryReinforced")
    assert (a[m[0]]["used_count"], a[m[1]]["used_count"], a[m[2]]["not_useful_count"]) == (1, 1, 1)
    assert a[m[2]]["used_count"] == 0 and m[4] not in a

    with engine.connect() as conn:
        inputs = activity_for(conn, tenant, m)
    assert inputs[m[0]].access_count == 2 and inputs[m[4]].access_count == 0
    assert inputs[m[4]].last_access_at is None and inputs[m[4]].recorded_at is not None
    with engine.connect() as conn:
        assert activity_for(conn, "some-other-tenant", m) == {}


def test_hebbian_edges_only_through_the_validation_gate(engine, tenant) -> None:
    m = record(engine, tenant, [f"hebbian memory {i}" for i in range(5)])
    r1 = served(engine, tenant, [m[0], m[1], m[2], m[3]])
    feedback(engine, tenant, r1, used=[m[0], m[1]], not_useful=[m[2]])  # m0–m1 pass; m2 was not useful
    r2 = served(engine, tenant, [m[2], m[3]])
    feedback(engine, tenant, r2, used=[m[2], m[4]])  # m4 was not served by r2: no edge
    r3 = served(engine, tenant, [m[3], m[4]])  # co-recalled, never marked used: no edge
    feedback(engine, tenant, r3, used=[m[3]])
    sync(engine)
    assert set(edges(engine, tenant)) == {key(m[0], m[1])}
    assert edges(engine, tenant)[key(m[0], m[1])][0] == pytest.approx(math.log(2))

    r4 = served(engine, tenant, [m[1], m[0]])
    feedback(engine, tenant, r4, used=[m[1], m[0]])
    sync(engine)
    weight, updated_at = edges(engine, tenant)[key(m[0], m[1])]
    assert weight == pytest.approx(math.log(3), abs=1e-4)  # ln(e^w + 1) from ln 2 (decay over seconds ≈ 0)
    assert updated_at == recorded_at(engine, tenant, f"recall-{r4}", "RecallFeedbackGiven")


def test_causal_and_adjusted_edges_and_read_time_decay(engine, tenant) -> None:
    from recall.edges import neighbours

    m = record(engine, tenant, [f"edge memory {i}" for i in range(4)])
    r = served(engine, tenant, [m[0], m[1]])
    feedback(engine, tenant, r, used=[m[0], m[1]])
    sup = validate_payload("MemorySuperseded", {"memory_id": str(m[2]), "superseded_by": str(m[3]),
                                                "reason": "corrected", "trigger": "explicit"})
    with engine.begin() as conn:
        clock = conn.execute(text("SELECT now()")).scalar_one()
    adjust = [validate_payload("EdgeAdjusted", {"source_id": str(s), "target_id": str(t), "edge_kind": "semantic",
                                                "weight": w, "reason": "test", "clock": clock.isoformat()})
              for s, t, w in ((m[1], m[0], 0.8), (m[3], m[0], 0.4))]
    with engine.begin() as conn:
        append(conn, tenant, [NewEvent("MemorySuperseded", f"memory-{m[2]}", sup),
                              *(NewEvent("EdgeAdjusted", "consolidation-test", a) for a in adjust)],
               {"actor": "system:scheduler"})
    sync(engine)
    e = edges(engine, tenant)
    assert e[(m[3], m[2], "causal")][0] == 1.0  # new → old
    assert e[key(m[0], m[1], "semantic")] == (0.8, clock)  # stored lowest id first, at the event's clock
    assert e[key(m[0], m[3], "semantic")][0] == 0.4

    with engine.connect() as conn:
        now = conn.execute(text("SELECT now()")).scalar_one()
        near = {(n.neighbour_id, n.kind): n for n in neighbours(conn, tenant, [m[0]], now)}
        later = {(n.neighbour_id, n.kind): n for n in neighbours(conn, tenant, [m[0]], now + timedelta(days=30))}
        causal = neighbours(conn, tenant, [m[2]], now, kinds=["causal"])
    assert near[(m[1], "hebbian")].weight == pytest.approx(math.log(2), abs=1e-4)
    assert later[(m[1], "hebbian")].weight == pytest.approx(math.log(2) / 2, abs=1e-4)  # 30-day half-life
    assert later[(m[1], "semantic")].weight == 0.8  # semantic edges do not decay at read time
    assert [(c.neighbour_id, c.outgoing) for c in causal] == [(m[3], False)]

    zero = validate_payload("EdgeAdjusted", {"source_id": str(m[0]), "target_id": str(m[3]), "edge_kind": "semantic",
                                             "weight": 0.0, "reason": "forget", "clock": clock.isoformat()})
    with engine.begin() as conn:
        append(conn, tenant, [NewEvent("EdgeAdjusted", "consolidation-test", zero)], {"actor": "system:scheduler"})
    sync(engine)
    assert key(m[0], m[3], "semantic") not in edges(engine, tenant)


def test_rebuild_reproduces_activity_and_edges(engine, tenant) -> None:
    from projections.rebuild import rebuild, verify
    from projections.registry import PROJECTORS

    m = record(engine, tenant, [f"rebuild memory {i}" for i in range(4)])
    for pair in ((m[0], m[1]), (m[1], m[2]), (m[0], m[1])):
        r = served(engine, tenant, [*pair, m[3]])
        feedback(engine, tenant, r, used=list(pair), not_useful=[m[3]])
    reinforced(engine, tenant, m[2], "rebuild memory 2")
    sync(engine)
    before = {t: rows(engine, t, tenant, "memory_id") for t in ("memory_activity",)}
    before_edges = rows(engine, "memory_edges", tenant, "source_id, target_id, kind")
    assert len(before_edges) == 2 and len(before["memory_activity"]) == 4
    for name in ("activity", "edges"):
        assert verify(engine, PROJECTORS[name], batch_size=7).identical
        rebuild(engine, PROJECTORS[name], batch_size=7)
    assert rows(engine, "memory_activity", tenant, "memory_id") == before["memory_activity"]
    assert rows(engine, "memory_edges", tenant, "source_id, target_id, kind") == before_edges
