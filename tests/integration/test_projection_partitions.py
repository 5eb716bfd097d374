"""Projections in partitions (projections/partitions.py): a projection's work split by tenant, one checkpoint row per
partition, each batch claimed with advisory locks; splitting anew is exact; the gap-safe read holds per partition.

The projections are shared by the whole test session, so each test puts the ones it partitions back to one
partition at its end (exact: `partitions_for` aligns them first).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from domain.events import NewEvent, memory_stream
from eventstore.append import append
from projections import partitions as parts
from projections.registry import get_projector
from projections.runner import align, catch_up, has_reached, load_checkpoint, partitions_for, run_batch, status

NAMES = ("memories", "keyword")


def mem_event(content: str) -> NewEvent:
    mid = uuid.uuid4()
    return NewEvent(type="MemoryRecorded", stream_id=memory_stream(mid), expected_version=0,
                    data={"memory_id": str(mid), "content": content, "kind": "observation", "agent_id": None,
                          "project": None, "session_id": None, "tags": [], "metadata": {}})


def scalar(engine, sql: str, **params: object):
    with engine.connect() as conn:
        return conn.execute(text(sql), params).scalar_one()


def partition_of(engine, tenant: str, n: int) -> int:
    return scalar(engine, "SELECT engramlog_partition(:t, :n)", t=tenant, n=n)


def tenants_in_distinct_partitions(engine, n: int, count: int) -> list[str]:
    """`count` fresh tenants, each in another of `n` partitions."""
    found: dict[int, str] = {}
    while len(found) < count:
        t = f"t-{uuid.uuid4().hex[:10]}"
        found.setdefault(partition_of(engine, t, n), t)
    return list(found.values())


def drain(engine, *names: str) -> None:
    for name in names:
        catch_up(engine, get_projector(name), 500, max_seconds=120)


@pytest.fixture
def partitioned(engine) -> Iterator[object]:
    """Split NAMES into n partitions; back to one at the end."""
    def split(n: int) -> None:
        drain(engine, *NAMES)
        for name in NAMES:
            assert len(partitions_for(engine, get_projector(name), n)) == n

    yield split
    for name in NAMES:
        catch_up(engine, get_projector(name), 500, max_seconds=120)
        assert len(partitions_for(engine, get_projector(name), 1)) == 1


def counts(engine, tenant: str) -> tuple[int, int, int]:
    return (scalar(engine, "SELECT count(*) FROM memories WHERE tenant = :t", t=tenant),
            scalar(engine, "SELECT count(*) FROM keyword_docs WHERE tenant = :t", t=tenant),
            scalar(engine, "SELECT coalesce(max(n_docs), 0) FROM keyword_stats WHERE tenant = :t", t=tenant))


def test_an_upgrade_splits_at_the_checkpoint_it_had(engine, partitioned):
    """One row (what migration 0022 leaves) split into four at its checkpoint: nothing replayed, nothing skipped."""
    projector = get_projector("memories")
    drain(engine, "memories")
    with engine.connect() as conn:
        before = load_checkpoint(conn, "memories")
    partitioned(4)
    with engine.connect() as conn:
        rows = parts.rows(conn, "memories")
    assert [r.partition for r in rows] == [parts.Partition(i, 4) for i in range(4)]
    assert {r.checkpoint for r in rows} == {before}
    assert run_batch(engine, projector, 500) == 0  # nothing to apply again


def test_each_tenant_is_applied_once_in_its_partition(engine, partitioned):
    partitioned(3)
    tenants = tenants_in_distinct_partitions(engine, 3, 3)
    for i, tenant in enumerate(tenants):
        with engine.begin() as conn:
            append(conn, tenant, [mem_event(f"lisbon harbour note {i} {j}") for j in range(5 + i)], {})
    drain(engine, *NAMES)
    for i, tenant in enumerate(tenants):
        assert counts(engine, tenant) == (5 + i, 5 + i, 5 + i)
        with engine.connect() as conn:
            assert has_reached(conn, get_projector("memories"), scalar(
                engine, "SELECT max(position) FROM events WHERE tenant = :t", t=tenant), tenant)
    with engine.connect() as conn:
        assert has_reached(conn, get_projector("keyword"), scalar(engine, "SELECT max(position) FROM events"))
        assert status(conn, get_projector("memories")).lag_events == 0


def test_a_partition_with_nothing_of_its_own_moves_past_the_others(engine, partitioned):
    """A partition none of whose tenants wrote still follows the log (so its read never scans from far back)."""
    partitioned(4)
    (tenant,) = tenants_in_distinct_partitions(engine, 4, 1)
    with engine.begin() as conn:
        positions = append(conn, tenant, [mem_event(f"only one tenant {j}") for j in range(4)], {})
    drain(engine, "memories")
    with engine.connect() as conn:
        rows = parts.rows(conn, "memories")
    assert all(r.checkpoint.position >= positions[-1] for r in rows)


def test_a_late_commit_is_applied_in_its_partition_while_the_others_go_on(engine, partitioned):
    """A's transaction takes a lower position and commits last: B (another partition) and C (A's partition) are
    held behind it, as one partition was; once A commits, all three are applied, none twice."""
    partitioned(2)
    a, b = tenants_in_distinct_partitions(engine, 2, 2)
    projector = get_projector("memories")
    conn_a = engine.connect()
    trans_a = conn_a.begin()
    try:
        (pos_a,) = append(conn_a, a, [mem_event("late commit from A")], {})
        with engine.begin() as conn:
            (pos_b,) = append(conn, b, [mem_event("early commit from B")], {})
            (pos_c,) = append(conn, a, [mem_event("early commit from A's partition")], {})
        assert pos_a < pos_b < pos_c
        catch_up(engine, projector, 500)
        assert counts(engine, a)[0] == 0
        with engine.connect() as conn:
            assert not has_reached(conn, projector, pos_c, a)
        trans_a.commit()
    finally:
        if trans_a.is_active:
            trans_a.rollback()
        conn_a.close()
    drain(engine, *NAMES)
    assert counts(engine, a) == (2, 2, 2)
    assert counts(engine, b) == (1, 1, 1)
    with engine.connect() as conn:
        assert has_reached(conn, projector, pos_c, a) and has_reached(conn, projector, pos_b, b)


def test_a_partition_held_by_another_runner_is_left_to_it(engine, partitioned):
    """A runner whose partition is claimed (a batch in another transaction) goes on with the other partitions."""
    partitioned(2)
    a, b = tenants_in_distinct_partitions(engine, 2, 2)
    with engine.begin() as conn:
        append(conn, a, [mem_event("in a held partition")], {})
        append(conn, b, [mem_event("in a free partition")], {})
    held = parts.Partition(partition_of(engine, a, 2), 2)
    with engine.connect() as other, other.begin():
        other.execute(parts.SHARED, {"key": parts.lock_key("memories")})
        other.execute(parts.EXCLUSIVE, {"key": parts.partition_key("memories", held)})
        assert run_batch(engine, get_projector("memories"), 500, held) is None
        catch_up(engine, get_projector("memories"), 500)
        assert counts(engine, a)[0] == 0 and counts(engine, b)[0] == 1
    drain(engine, "memories")
    assert counts(engine, a)[0] == 1


def test_splitting_anew_aligns_the_partitions_first(engine, partitioned):
    """Four partitions at different checkpoints become two only after each is brought to the furthest: every event
    applied exactly once across the change."""
    partitioned(4)
    tenants = tenants_in_distinct_partitions(engine, 4, 4)
    for i, tenant in enumerate(tenants):
        with engine.begin() as conn:
            append(conn, tenant, [mem_event(f"harbour {i} {j}") for j in range(3)], {})
    first = parts.Partition(partition_of(engine, tenants[0], 4), 4)
    assert run_batch(engine, get_projector("memories"), 500, first) == 3  # only one partition moved on
    with engine.connect() as conn:
        assert len({r.checkpoint for r in parts.rows(conn, "memories")}) > 1
    assert len(partitions_for(engine, get_projector("memories"), 2)) == 2
    with engine.connect() as conn:
        assert len({r.checkpoint for r in parts.rows(conn, "memories")}) == 1
    drain(engine, *NAMES)
    for tenant in tenants:
        assert counts(engine, tenant) == (3, 3, 3)


def test_align_under_the_exclusive_lock_gives_one_checkpoint(engine, partitioned):
    """Every partition brought to the furthest one's checkpoint (what verify compares at)."""
    partitioned(3)
    tenants = tenants_in_distinct_partitions(engine, 3, 3)
    for tenant in tenants:
        with engine.begin() as conn:
            append(conn, tenant, [mem_event("aligned")], {})
    last = parts.Partition(partition_of(engine, tenants[-1], 3), 3)
    assert run_batch(engine, get_projector("memories"), 500, last) == 1  # the furthest: past the others' events
    with engine.begin() as conn:
        conn.execute(parts.EXCLUSIVE, {"key": parts.lock_key("memories")})
        target = align(conn, get_projector("memories"))
        assert {r.checkpoint for r in parts.rows(conn, "memories")} == {target}
    for tenant in tenants:
        assert counts(engine, tenant)[0] == 1


def test_runners_in_threads_share_the_partitions_and_apply_each_event_once(engine, partitioned):
    partitioned(4)
    tenants = tenants_in_distinct_partitions(engine, 4, 4)
    stop = threading.Event()
    errors: list[BaseException] = []

    def runner() -> None:
        try:
            while not stop.is_set():
                for name in NAMES:
                    catch_up(engine, get_projector(name), 7, max_seconds=5)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=runner) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for j in range(6):
            for tenant in tenants:
                with engine.begin() as conn:
                    append(conn, tenant, [mem_event(f"concurrent {j} {k}") for k in range(5)], {})
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors
    drain(engine, *NAMES)
    for tenant in tenants:
        assert counts(engine, tenant) == (30, 30, 30)


def test_a_catch_up_leaves_the_shared_random_generator_alone(engine, partitioned):
    """Which partition a catch-up tries first is drawn from a generator of the runner's own: a caller's seeded
    `random` (hypothesis seeds it around each draw, and warned when an API thread's catch-up moved it) is untouched."""
    import random

    partitioned(3)
    [tenant] = tenants_in_distinct_partitions(engine, 3, 1)
    with engine.begin() as conn:
        append(conn, tenant, [mem_event("oslo ferry note")], {})
    random.seed(5)
    state = random.getstate()
    drain(engine, "memories")
    assert random.getstate() == state
    assert counts(engine, tenant)[0] == 1
