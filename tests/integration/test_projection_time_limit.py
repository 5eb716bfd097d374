"""One slow event never holds a projector: an apply over settings.projections.projection_event_timeout_s (Python that
never returns, a statement over its statement_timeout, the Dramatiq actor's own time limit) is one counted attempt of
that event, parked after MAX_EVENT_FAILURES with the checkpoint past it, and the events after it are applied."""

from __future__ import annotations

import time
import uuid

import pytest
from sqlalchemy import text

import projections.runner as runner
from domain.events import NewEvent, memory_stream
from eventstore.append import append
from eventstore.read import Checkpoint
from infra.settings import get_settings, replace
from projections.dead_letters import MAX_EVENT_FAILURES, dead_letters
from projections.runner import catch_up, load_checkpoint, save_checkpoint
from projections.time_limit import ActorTimeLimitExceeded


class Stalling:
    """A projector of MemoryRecorded that stalls on the memory whose content says how: "spin" (Python that never
    returns), "sleep" (a statement that runs past a 200 ms statement_timeout), "actor" (the actor's time limit)."""

    types = ("MemoryRecorded",)
    tables: tuple[str, ...] = ()

    def __init__(self, tenant: str) -> None:
        self.name, self.tenant, self.applied = f"test-stall-{uuid.uuid4().hex[:8]}", tenant, []

    def apply(self, conn, events):
        for e in events:
            how = e.data["content"] if e.tenant == self.tenant else ""
            if how == "spin":
                while True:
                    pass
            if how == "sleep":
                conn.execute(text("SET LOCAL statement_timeout = 200"))
                conn.execute(text("SELECT pg_sleep(30)"))
            if how == "actor":
                raise ActorTimeLimitExceeded()
        self.applied.extend(e.position for e in events)


def _memories(engine, tenant: str, contents: list[str]) -> list[int]:
    events = [NewEvent("MemoryRecorded", memory_stream(m), {
        "memory_id": str(m), "content": c, "kind": "observation", "agent_id": None, "project": None,
        "session_id": None, "tags": [], "metadata": {}}, expected_version=0)
        for m, c in ((uuid.uuid4(), c) for c in contents)]
    with engine.begin() as conn:
        return append(conn, tenant, events, {"actor": "test"})


def _start_before(engine, projector: Stalling, first: int) -> None:
    """The projector's checkpoint just before `first` (not the whole log of the test session)."""
    with engine.begin() as conn:
        tx = conn.execute(text("SELECT tx_id::text::bigint FROM events WHERE position = :p"), {"p": first}).scalar()
        conn.execute(text("INSERT INTO projection_checkpoints (name) VALUES (:n) ON CONFLICT DO NOTHING"),
                     {"n": projector.name})
        save_checkpoint(conn, projector.name, Checkpoint(tx, first - 1))


@pytest.fixture
def limit(monkeypatch):
    settings = replace(get_settings(), projection_event_timeout_s=1.0)
    monkeypatch.setattr(runner, "get_settings", lambda: settings)


@pytest.mark.parametrize("how,error", [("spin", "ApplyTimeExceeded"), ("sleep", "QueryCanceled")])
def test_an_event_over_its_time_is_counted_then_parked_and_the_rest_applied(engine, tenant, limit, how,
                                                                             error) -> None:
    positions = _memories(engine, tenant, ["fine before", "fine too", how, "fine after"])
    projector = Stalling(tenant)
    _start_before(engine, projector, positions[0])
    started = time.monotonic()
    for _ in range(MAX_EVENT_FAILURES):
        catch_up(engine, projector, 500, max_seconds=30)
    took = time.monotonic() - started
    letters = dead_letters(engine.connect(), projector.name)
    assert [(d.position, d.status, d.attempts) for d in letters] == [(positions[2], "parked", MAX_EVENT_FAILURES)]
    assert error in letters[0].error, letters[0].error
    assert sorted(set(projector.applied)) == [positions[0], positions[1], positions[3]]
    with engine.connect() as conn:
        assert load_checkpoint(conn, projector.name).position == positions[3]
    assert took < 60, took  # three bounded attempts, not a stall (generous for a loaded machine)


def test_the_actors_time_limit_is_counted_too(engine, tenant, limit) -> None:
    positions = _memories(engine, tenant, ["actor"])
    projector = Stalling(tenant)
    _start_before(engine, projector, positions[0])
    with pytest.raises(ActorTimeLimitExceeded):  # Dramatiq ends the actor, as it expects; the attempt is counted
        catch_up(engine, projector, 500)
    letters = dead_letters(engine.connect(), projector.name)
    assert [(d.position, d.status, d.attempts) for d in letters] == [(positions[0], "failing", 1)]
    assert letters[0].error.startswith("TimeLimitExceeded")
