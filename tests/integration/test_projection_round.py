"""A round (projections/round.py): the due projectors' batches in one transaction, the log read once for all of them;
a round that fails keeps nothing and its projectors go batch by batch (workers/actors.py catch_up_all)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from sqlalchemy import Connection, text

from domain.events import RecordedEvent
from eventstore.append import append
from eventstore.horizon import horizon_and_head
from eventstore.read import Checkpoint, read_types_after
from projections import partitions as parts
from projections.registry import get_projector
from projections.round import run_round
from projections.runner import catch_up, has_reached
from tests.integration.test_projection_partitions import counts, mem_event

pytestmark = pytest.mark.own_database
NAMES = ("memories", "keyword")


class PoisonedProjector:
    """Fails on any MemoryRecorded whose content says "poison"; counts the others."""

    types = ("MemoryRecorded",)
    tables: tuple[str, ...] = ()
    name = "test_poisoned"

    def __init__(self) -> None:
        self.applied: list[int] = []

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        if any("poison" in e.data.get("content", "") for e in events):
            raise ValueError("poisoned event")
        self.applied += [e.position for e in events]


def horizon(engine) -> int:
    with engine.connect() as conn:
        return horizon_and_head(conn)[0]


def reached(engine, projector, position: int) -> bool:
    with engine.connect() as conn:
        return has_reached(conn, projector, position)


def rounds_until(engine, names: tuple[str, ...], position: int, batch_size: int) -> list[dict[str, int]]:
    """Rounds of `names` until each has applied up to `position`; what each round applied."""
    projectors = [get_projector(n) for n in names]
    for p in projectors:
        catch_up(engine, p, 1, max_seconds=0.0)  # its checkpoint row, when none: a round needs one
    seen: list[dict[str, int]] = []
    deadline = time.monotonic() + 120
    while not all(reached(engine, p, position) for p in projectors):
        assert time.monotonic() < deadline, seen[-5:]
        seen.append(run_round(engine, projectors, batch_size, horizon(engine)).applied)
    return seen


def test_a_round_applies_each_projectors_events_once(engine):
    """Small batches, so the shared read stops short of the horizon: every event applied once by each projector."""
    tenant = f"round-{uuid.uuid4().hex[:8]}"
    with engine.begin() as conn:
        last = append(conn, tenant, [mem_event(f"round fact number {i}") for i in range(7)], {})[-1]
    seen = rounds_until(engine, NAMES, last, batch_size=2)
    assert any(len([n for n, c in r.items() if c]) == 2 for r in seen), seen  # both applied in one round
    assert counts(engine, tenant) == (7, 7, 7)


def test_a_projector_held_by_another_runner_is_left_out(engine):
    """The keyword projection's partition claimed elsewhere: the round applies the memories projection's share alone;
    keyword's events wait, and are applied once it is free."""
    tenant = f"round-{uuid.uuid4().hex[:8]}"
    rounds_until(engine, NAMES, 0, batch_size=500)  # checkpoint rows
    with engine.begin() as conn:
        last = append(conn, tenant, [mem_event("held elsewhere")], {})[-1]
    with engine.connect() as other, other.begin():
        other.execute(parts.EXCLUSIVE, {"key": parts.partition_key("keyword", parts.WHOLE)})
        applied = run_round(engine, [get_projector(n) for n in NAMES], 500, horizon(engine)).applied
        assert "keyword" not in applied
        assert not reached(engine, get_projector("keyword"), last)
    rounds_until(engine, NAMES, last, batch_size=500)
    assert counts(engine, tenant) == (1, 1, 1)


def test_the_shared_read_starts_each_type_after_its_own_checkpoint(engine):
    """Two types, one far behind the other: the read gives each from its own checkpoint, in log order, and says
    whether it stopped at its limit."""
    tenant = f"round-{uuid.uuid4().hex[:8]}"
    with engine.begin() as conn:
        first = append(conn, tenant, [mem_event("one"), mem_event("two"), mem_event("three")], {})
    with engine.connect() as conn:
        at = conn.execute(text("SELECT tx_id::text::bigint FROM events WHERE position = :p"),
                          {"p": first[1]}).scalar_one()
        below = horizon_and_head(conn)[0]
        events, more = read_types_after(conn, {"MemoryRecorded": Checkpoint(at, first[1]),
                                               "NoSuchType": Checkpoint()}, 500, 2**40, below)
        assert [e.position for e in events if e.tenant == tenant] == [first[2]]
        assert not more
        events, more = read_types_after(conn, {"MemoryRecorded": Checkpoint(at, first[0])}, 1, 2**40, below)
        assert [e.position for e in events] == [first[1]] and more


def test_a_failing_round_keeps_nothing_and_its_projectors_go_batch_by_batch(engine, monkeypatch):
    """One projector's bad event fails the round: nothing of it is kept, the batch-by-batch path applies the others'
    events once and counts the bad one as one failed attempt (projections/dead_letters.py), as without rounds."""
    from projections.dead_letters import dead_letters
    from projections.registry import PROJECTORS
    from workers.actors import catch_up_all

    poisoned = PoisonedProjector()
    monkeypatch.setitem(PROJECTORS, poisoned.name, poisoned)
    tenant = f"round-{uuid.uuid4().hex[:8]}"
    with engine.begin() as conn:
        append(conn, tenant, [mem_event("a harmless fact")], {})
    catch_up_all()  # the poisoned projector's checkpoint row: it goes in rounds from now on
    assert counts(engine, tenant) == (1, 1, 1) and len(poisoned.applied) >= 1
    rounds: list[Any] = []
    import projections.round

    def recording(*args: Any, **kwargs: Any) -> Any:
        try:
            rounds.append(run_round(*args, **kwargs))
        except Exception as exc:
            rounds.append(exc)
            raise
        return rounds[-1]

    monkeypatch.setattr(projections.round, "run_round", recording)
    with engine.begin() as conn:
        bad = append(conn, tenant, [mem_event("a poison pill"), mem_event("after the pill")], {})
    catch_up_all()
    assert any(isinstance(r, ValueError) for r in rounds), rounds
    assert counts(engine, tenant) == (3, 3, 3)  # the other projectors applied both, once
    with engine.connect() as conn:
        [letter] = [d for d in dead_letters(conn, poisoned.name) if d.position == bad[0]]
    assert letter.attempts == 1 and letter.status == "failing"
    assert bad[0] not in poisoned.applied


def test_a_lagging_projector_does_not_hold_the_others_to_its_pace(engine, monkeypatch):
    """A projector far behind reads MemoryRecorded from its own checkpoint in small rounds; the memories projection,
    past that read, is applied batch by batch at once (Round.unread), not after the laggard has caught up."""
    from infra.settings import get_settings, replace
    from projections.registry import PROJECTORS
    from projections.runner import catch_up
    from workers.actors import catch_up_all

    tenant = f"round-{uuid.uuid4().hex[:8]}"
    with engine.begin() as conn:
        append(conn, tenant, [mem_event(f"history {i}") for i in range(12)], {})
    catch_up_all()
    with engine.begin() as conn:
        last = append(conn, tenant, [mem_event("the newest fact")], {})[-1]
    seen_at_second_batch: list[bool] = []

    class Laggard:
        name, types, tables = "test_laggard", ("MemoryRecorded",), ()
        batches = 0

        def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
            Laggard.batches += 1
            if Laggard.batches == 2:
                seen_at_second_batch.append(reached(engine, get_projector("memories"), last))

    laggard = Laggard()
    catch_up(engine, laggard, 1, max_seconds=0.0)  # its checkpoint row, at the log's start
    monkeypatch.setitem(PROJECTORS, laggard.name, laggard)
    small = replace(get_settings(), projection_batch_size=5)
    monkeypatch.setattr("workers.actors.get_settings", lambda: small)
    catch_up_all()
    assert Laggard.batches >= 3 and seen_at_second_batch == [True]
    assert reached(engine, laggard, last)


def test_a_forgotten_event_moves_the_checkpoints_of_its_readers(engine):
    """An event whose key is gone is read as a ContentForgotten (eventstore/codec.py): no handler applies it, but the
    projectors of its stored type are given it, so a round moves their checkpoints past it (else a read waiting on
    that position would wait forever)."""
    tenant = f"round-{uuid.uuid4().hex[:8]}"
    event = mem_event("a fact whose key is destroyed")
    with engine.begin() as conn:
        [position] = append(conn, tenant, [event], {})
        conn.execute(text("DELETE FROM subject_keys WHERE tenant = :t AND stream_id = :s"),
                     {"t": tenant, "s": event.stream_id})
    rounds_until(engine, NAMES, position, batch_size=500)
    assert counts(engine, tenant) == (0, 0, 0)
