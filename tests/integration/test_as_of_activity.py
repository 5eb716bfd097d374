"""Activation and decay as of a moment (issue 18 §1; recall/timeframe.py, memory_activity_versions, migration 0026):
under as_of a memory recalled many times after a position has the access count, the activation inputs and the
clock it had at that position; a rebuild gives the same activity versions, batch cuts or not."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from funnel_support import ask, project, remember_all, settings, stage
from lifecycle_support import verify_tenant
from sqlalchemy import text

from domain.activation import age_hours, normalised_activation
from recall.timeframe import TimeFrame, resolve_as_of

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database

QUERY = "When does the lighthouse keeper in Vardø light the lamp?"
FACTS = ["The lighthouse keeper in Vardø lights the lamp at four in the afternoon in winter",
         "The ferry to the island leaves the harbour at seven each morning",
         "The bakery on the pier sells cardamom buns on Saturdays"]


def _composite(answer, memory_id) -> dict:
    [r] = [r for r in answer.results if r.memory_id == memory_id]
    return r.explanation["stages"]["composite"]


def _recorded_at(engine, tenant: str, position: int) -> datetime:
    with engine.connect() as conn:
        return conn.execute(text("SELECT recorded_at FROM events WHERE tenant = :t AND position <= :p"
                                 " ORDER BY position DESC LIMIT 1"), {"t": tenant, "p": position}).scalar_one()


def _versions(engine, tenant: str, memory_id) -> list:
    with engine.connect() as conn:
        return list(conn.execute(text(
            "SELECT valid_from, valid_to, access_count, last_access_at FROM memory_activity_versions"
            " WHERE tenant = :t AND memory_id = :m ORDER BY valid_from"), {"t": tenant, "m": memory_id}))


def test_as_of_answers_the_access_count_activation_and_clock_of_then(engine, tenant):
    keeper, *_ = remember_all(engine, tenant, FACTS)
    first = ask(engine, tenant, QUERY, k=3)
    assert first.results[0].memory_id == keeper.memory_id
    project(engine, first.position)
    p = resolve_as_of(engine, tenant, first.position)  # one access recorded by then
    assert p is not None
    later = [ask(engine, tenant, QUERY, k=3) for _ in range(4)]  # four more accesses after p
    project(engine, later[-1].position)

    now = ask(engine, tenant, QUERY, k=3)
    assert _composite(now, keeper.memory_id)["inputs"]["access_count"] == 5

    then = ask(engine, tenant, QUERY, k=3, frame=TimeFrame(as_of=p))
    inputs = _composite(then, keeper.memory_id)["inputs"]
    assert inputs["access_count"] == 1
    # the clock is the position's recorded time, from the log, not the recall's
    clock = _recorded_at(engine, tenant, p)
    assert then.explanation["clock"] == clock.isoformat()
    assert stage(then, "composite")["config"]["clock"] == clock.isoformat()
    # the age is measured from then to the last access as of then (the first recall's), and activation from both
    [at_p] = [v for v in _versions(engine, tenant, keeper.memory_id)
              if v.valid_from <= p and (v.valid_to is None or v.valid_to > p)]
    assert at_p.access_count == 1
    age = age_hours(clock, at_p.last_access_at, clock)
    assert inputs["age_hours"] == round(age, 3)
    d = settings().lifecycle.actr_decay
    assert _composite(then, keeper.memory_id)["signals"]["activation"] == round(normalised_activation(1, age, d), 6)


def test_the_as_of_clock_holds_whatever_clock_the_caller_hands_in(engine, tenant):
    from infra.embedding import get_embedder
    from recall.scope import Scope
    from recall.service import RecallRequest, search

    keeper, *_ = remember_all(engine, tenant, FACTS)
    p = resolve_as_of(engine, tenant, keeper.position)
    assert p is not None
    cfg = settings()
    far = datetime(2031, 1, 1, tzinfo=UTC)

    def at(frame: TimeFrame) -> dict:
        found = search(engine, get_embedder(cfg.embedding.embedding_model), cfg,
                       RecallRequest(Scope(tenant), QUERY, 3, frame=frame), now=far)
        [r] = [r for r in found.results if r.memory_id == keeper.memory_id]
        return {"clock": found.explanation["clock"], **r.explanation["stages"]["composite"]}

    current, then = at(TimeFrame()), at(TimeFrame(as_of=p))
    assert current["clock"] == far.isoformat() and current["inputs"]["age_hours"] > 24 * 365  # years untouched
    assert then["clock"] == _recorded_at(engine, tenant, p).isoformat()
    assert then["inputs"]["age_hours"] < 1 and then["inputs"]["access_count"] == 0  # just recorded, never recalled
    assert then["signals"]["activation"] > current["signals"]["activation"]


def test_activity_versions_chain_and_a_rebuild_gives_the_same_rows(engine, tenant):
    keeper, *_ = remember_all(engine, tenant, FACTS)
    answers = [ask(engine, tenant, QUERY, k=3) for _ in range(3)]
    project(engine, answers[-1].position)
    versions = _versions(engine, tenant, keeper.memory_id)
    assert [v.access_count for v in versions] == [1, 2, 3]
    assert [v.valid_from for v in versions] == [a.position for a in answers]  # one version per access, at its event
    assert [v.valid_to for v in versions] == [a.position for a in answers[1:]] + [None]
    with engine.connect() as conn:
        current = conn.execute(text("SELECT access_count, last_access_at FROM memory_activity"
                                    " WHERE tenant = :t AND memory_id = :m"),
                               {"t": tenant, "m": keeper.memory_id}).one()
    assert (versions[-1].access_count, versions[-1].last_access_at) == tuple(current)
    assert verify_tenant(engine, "activity", tenant) == {"memory_activity": 0, "memory_activity_versions": 0}
