"""Where each reader stands in one statement (eventstore/progress.py standings), and the worker's catch-up passing
over the projectors that have nothing to do (workers/actors.py catch_up_all): a wake-up follows every append, and
most appends concern a few of the projectors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from sqlalchemy import Connection

from domain.events import RecordedEvent
from eventstore.progress import standings
from projections.registry import PROJECTORS
from projections.round import run_round
from projections.runner import catch_up
from services.remember import MemoryInput, remember

pytestmark = pytest.mark.own_database
META = {"actor": "test", "correlation_id": "standings"}


class CountingProjector:
    """Applies nothing; counts the MemoryRecorded events it is given."""

    types = ("MemoryRecorded",)
    tables: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.name = "test_counting"
        self.applied = 0

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        self.applied += len(events)


def _write(engine: Any, tenant: str, text_: str) -> None:
    remember(engine, tenant, [MemoryInput(text_, must_keep=True)], META)


def test_a_reader_is_ahead_until_it_has_applied_every_event_of_its_types(engine, tenant) -> None:
    counting = CountingProjector()
    readers = {counting.name: counting.types, "never_read": ("SectionStatusChanged",)}
    _write(engine, tenant, "the Porto warehouse door code is 7370")
    with engine.connect() as conn:
        before = standings(conn, readers)
    assert before[counting.name].ahead  # no checkpoint yet: everything is ahead
    assert before[counting.name].partitions == {1} and not before[counting.name].stored  # never ran: no rows
    assert not before["never_read"].ahead  # no event of its type in the log
    catch_up(engine, counting, 100)
    with engine.connect() as conn:
        after = standings(conn, readers)[counting.name]
    assert not after.ahead and after.stored and after.partitions == {1}
    _write(engine, tenant, "the Porto warehouse door code is 7320")
    with engine.connect() as conn:
        assert standings(conn, readers)[counting.name].ahead
    catch_up(engine, counting, 100)
    assert counting.applied == 2


def test_catch_up_all_runs_only_the_projectors_with_events_ahead(engine, tenant, monkeypatch) -> None:
    """Rounds of one batch per partition, each after one standings statement; a projector is run batch by batch or
    in the round's one transaction (projections/round.py), which is given the due projectors only."""
    import projections.round
    import projections.runner
    from workers.actors import catch_up_all

    counting = CountingProjector()
    monkeypatch.setitem(PROJECTORS, counting.name, counting)
    ran: list[str] = []

    def recording(engine_: Any, projector: Any, *args: Any, **kwargs: Any) -> int:
        ran.append(projector.name)
        return catch_up(engine_, projector, *args, **kwargs)

    def recording_round(engine_: Any, projectors: Any, *args: Any, **kwargs: Any) -> Any:
        ran.extend(p.name for p in projectors)
        return run_round(engine_, projectors, *args, **kwargs)

    monkeypatch.setattr(projections.runner, "catch_up", recording)
    monkeypatch.setattr(projections.round, "run_round", recording_round)
    _write(engine, tenant, "Bob's phone is 555-1234")
    catch_up_all()
    assert {counting.name, "memories", "keyword"} <= set(ran)
    assert ran.count("memories") == 1  # applied in the first round; not run again only to find nothing
    ran.clear()
    catch_up_all()
    assert ran == []  # every projector has applied everything: none is run
    _write(engine, tenant, "Bob's badge is 5521")
    catch_up_all()
    assert counting.name in ran and "memories" in ran
    assert "sessions" not in ran and "transcripts" not in ran  # nothing of theirs was appended
    assert counting.applied == 2


def test_the_standings_statement_is_planned_once_on_a_connection(engine) -> None:
    """Its readers' names and types are in its text, with no parameter: once psycopg prepares it (its fifth run),
    PostgreSQL runs one generic plan, never planning it again per call."""
    from sqlalchemy import text

    from infra.db import reading

    readers = {p.name: p.types for p in PROJECTORS.values()}
    with reading(engine) as conn:
        first = standings(conn, readers)
        for _ in range(9):
            assert standings(conn, readers) == first
        [(generic, custom)] = conn.execute(text(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%bool_or(CASE%'"))
    assert custom == 0 and generic >= 5
