"""The consolidation cycle's report says what deep recall could not answer in its scope: the blind spots live at
the run's clock (their count and the top ones by priority), read from the `blind_spots` read model, its own
tenant's only (and one agent's when the run is for one agent), in the stored ConsolidationCompleted too."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from lifecycle_support import record, sync
from sqlalchemy import text

from domain.events import BlindSpotRegistered, NewEvent, blind_spot_stream, deep_scope_key
from eventstore.append import append

CLOCK = datetime(2031, 5, 1, 12, 0, tzinfo=UTC)


def _gap(engine, tenant: str, question: str, priority: float, agent_id: str | None = None,
         registered: timedelta = timedelta(hours=-1), ttl: timedelta = timedelta(days=7)) -> str:
    """A BlindSpotRegistered as deep recall appends it (registered `registered` from CLOCK, live for `ttl`)."""
    scope_key = deep_scope_key(agent_id, None, None)
    at = CLOCK + registered
    gap = BlindSpotRegistered(gap_id=uuid.uuid4(), scope_key=scope_key, agent_id=agent_id, question=question,
                              priority=priority, registered_at=at, expires_at=at + ttl, recall_id=uuid.uuid4(),
                              reason="no results")
    with engine.begin() as conn:
        append(conn, tenant, [NewEvent.of(gap, blind_spot_stream(scope_key))],
               {"actor": "system:deep_recall", "source": "test"})
    return question


def test_the_consolidation_report_lists_the_live_blind_spots_of_its_tenant_only(engine, tenant) -> None:
    from workers.consolidation import consolidate

    other = f"{tenant}-other"
    record(engine, tenant, ["Alice moved to Lisbon in May."], agent_id="ag1")
    record(engine, other, ["Bob moved to Porto in June."], agent_id="ag1")
    low = _gap(engine, tenant, "who feeds the walrus?", 0.4, agent_id="ag1")
    high = _gap(engine, tenant, "what did we decide about penguins?", 0.9, agent_id="ag1")
    mid = _gap(engine, tenant, "where is the zebra budget?", 0.85, agent_id="ag2")
    _gap(engine, tenant, "an expired gap", 1.0, agent_id="ag1", registered=timedelta(days=-8))
    _gap(engine, tenant, "a gap registered after the clock", 1.0, agent_id="ag1", registered=timedelta(hours=1))
    _gap(engine, other, "another tenant's gap", 1.0, agent_id="ag1")
    sync(engine)

    [run] = consolidate(engine, CLOCK, tenant=tenant).runs
    spots = run.report["blind_spots"]
    assert spots["live"] == 3
    assert [(s["question"], s["priority"]) for s in spots["top"]] == [(high, 0.9), (mid, 0.85), (low, 0.4)]
    assert {s["agent_id"] for s in spots["top"]} == {"ag1", "ag2"}

    [agent_run] = consolidate(engine, CLOCK, tenant=tenant, agent_id="ag1").runs
    assert [s["question"] for s in agent_run.report["blind_spots"]["top"]] == [high, low]

    [other_run] = consolidate(engine, CLOCK, tenant=other).runs
    assert other_run.report["blind_spots"]["live"] == 1
    assert [s["question"] for s in other_run.report["blind_spots"]["top"]] == ["another tenant's gap"]

    # The stored report (ConsolidationCompleted) carries the same summary.
    with engine.connect() as conn:
        stored = conn.execute(text("SELECT data FROM events WHERE tenant = :t AND type = 'ConsolidationCompleted'"
                                   " AND stream_id = :s"), {"t": tenant, "s": f"consolidation-{run.run_id}"}
                              ).scalar_one()
    assert stored["report"]["blind_spots"] == spots
