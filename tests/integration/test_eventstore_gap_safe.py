"""Gap-safe reading: an event whose transaction took a lower position but commits later is never skipped.

Projectors are global (they apply every tenant's events), so every assertion is on this test's tenant rows.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from sqlalchemy import text

from domain.events import NewEvent, memory_stream
from eventstore.append import append
from eventstore.read import Checkpoint, head_position, read_after
from projections.registry import get_projector
from projections.runner import catch_up, has_reached, load_checkpoint, run_batch, status

MEMORY_TYPES = ("MemoryRecorded",)


def mem_event(content: str) -> NewEvent:
    mid = uuid.uuid4()
    return NewEvent(type="MemoryRecorded", stream_id=memory_stream(mid), expected_version=0,
                    data={"memory_id": str(mid), "content": content, "kind": "observation", "agent_id": None,
                          "project": None, "session_id": None, "tags": [], "metadata": {}})


def recall_event() -> NewEvent:
    rid = uuid.uuid4()
    return NewEvent(type="RecallServed", stream_id=f"recall-{rid}",
                    data={"recall_id": str(rid), "query": "q", "k": 1, "scope": {}, "results": [],
                          "latency_ms": 1.0})


def scalar(engine, sql: str, **params: object):
    with engine.connect() as conn:
        return conn.execute(text(sql), params).scalar_one()


def memory_contents(engine, tenant: str) -> set[str]:
    with engine.connect() as conn:
        return set(conn.execute(text("SELECT content FROM memories WHERE tenant = :t"), {"t": tenant}).scalars())


def keyword_docs(engine, tenant: str) -> int:
    return scalar(engine, "SELECT count(*) FROM keyword_docs WHERE tenant = :t", t=tenant)


def drain(engine, *names: str) -> None:
    """Catch the named projections up; loop because a concurrent runner may hold the lock briefly."""
    for name in names:
        projector = get_projector(name)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if run_batch(engine, projector, 1000) == 0:
                break
        else:
            raise AssertionError(f"projection {name} did not catch up")


def committed_head(engine) -> Checkpoint:
    with engine.connect() as conn:
        row = conn.execute(text("SELECT tx_id::text::bigint, position FROM events "
                                "ORDER BY tx_id DESC, position DESC LIMIT 1")).first()
    return Checkpoint(row[0], row[1]) if row else Checkpoint()


def mine(events, tenant: str):
    return [e for e in events if e.tenant == tenant]


# --- the late-commit race ------------------------------------------------------------------------------------

@pytest.mark.parametrize("projection", ["memories", "keyword"])
def test_late_commit_is_not_skipped_by_a_projector(engine, tenant, projection):
    projector = get_projector(projection)
    drain(engine, projection)
    conn_a = engine.connect()
    trans_a = conn_a.begin()
    try:
        (pos_a,) = append(conn_a, tenant, [mem_event("late commit from A")], {})
        xid_a = conn_a.execute(text("SELECT pg_current_xact_id()::text::bigint")).scalar_one()
        with engine.begin() as conn_b:
            (pos_b,) = append(conn_b, tenant, [mem_event("early commit from B")], {})
        # The race is real: A took the lower position, B committed first, and a reader following positions
        # alone would see B and move its checkpoint past A's still invisible position.
        assert pos_a < pos_b
        with engine.connect() as reader:
            visible = reader.execute(text("SELECT position FROM events WHERE tenant = :t"), {"t": tenant}).scalars()
            assert list(visible) == [pos_b]
            assert head_position(reader) >= pos_b

        catch_up(engine, projector, 500)

        # A's open transaction holds the snapshot xmin back: B is not applied yet, and the checkpoint stays
        # below A's transaction.
        if projection == "memories":
            assert memory_contents(engine, tenant) == set()
        else:
            assert keyword_docs(engine, tenant) == 0
        with engine.connect() as conn:
            checkpoint = load_checkpoint(conn, projection)
            assert checkpoint.tx_id < xid_a
            assert not has_reached(conn, projector, pos_b)
            assert status(conn, projector).lag_events >= 1
        trans_a.commit()
    finally:
        if trans_a.is_active:
            trans_a.rollback()
        conn_a.close()

    catch_up(engine, projector, 500)
    if projection == "memories":
        assert memory_contents(engine, tenant) == {"late commit from A", "early commit from B"}
    else:
        assert keyword_docs(engine, tenant) == 2
        assert scalar(engine, "SELECT n_docs FROM keyword_stats WHERE tenant = :t", t=tenant) == 2
    with engine.connect() as conn:
        assert has_reached(conn, projector, pos_b)
        assert load_checkpoint(conn, projection) >= Checkpoint(xid_a, pos_a)


def test_late_commit_across_many_batches(engine, tenant):
    """B commits many events behind A; small batches; all applied once A commits, none twice."""
    projector = get_projector("memories")
    drain(engine, "memories")
    conn_a = engine.connect()
    trans_a = conn_a.begin()
    try:
        append(conn_a, tenant, [mem_event(f"A{i}") for i in range(3)], {})
        for j in range(5):
            with engine.begin() as conn_b:
                append(conn_b, tenant, [mem_event(f"B{j}-{i}") for i in range(4)], {})
        catch_up(engine, projector, 3)
        assert memory_contents(engine, tenant) == set()
        trans_a.commit()
    finally:
        if trans_a.is_active:
            trans_a.rollback()
        conn_a.close()
    catch_up(engine, projector, 3)
    assert memory_contents(engine, tenant) == {f"A{i}" for i in range(3)} | {
        f"B{j}-{i}" for j in range(5) for i in range(4)}
    assert scalar(engine, "SELECT count(*) FROM memories WHERE tenant = :t", t=tenant) == 23


def test_aborted_transaction_releases_the_projection(engine, tenant):
    projector = get_projector("memories")
    drain(engine, "memories")
    conn_a = engine.connect()
    trans_a = conn_a.begin()
    try:
        append(conn_a, tenant, [mem_event("never committed")], {})
        with engine.begin() as conn_b:
            append(conn_b, tenant, [mem_event("committed")], {})
        catch_up(engine, projector, 500)
        assert memory_contents(engine, tenant) == set()
    finally:
        trans_a.rollback()
        conn_a.close()
    catch_up(engine, projector, 500)
    assert memory_contents(engine, tenant) == {"committed"}


# --- read_after ----------------------------------------------------------------------------------------------

def test_read_after_holds_back_everything_behind_an_open_transaction(engine, tenant):
    start = committed_head(engine)
    conn_a = engine.connect()
    trans_a = conn_a.begin()
    try:
        (pos_a,) = append(conn_a, tenant, [mem_event("A")], {})
        with engine.begin() as conn_b:
            (pos_b,) = append(conn_b, tenant, [mem_event("B")], {})
        with engine.connect() as reader:
            assert mine(read_after(reader, start, MEMORY_TYPES, 10_000), tenant) == []
        trans_a.commit()
    finally:
        if trans_a.is_active:
            trans_a.rollback()
        conn_a.close()
    with engine.connect() as reader:
        events = mine(read_after(reader, start, MEMORY_TYPES, 10_000), tenant)
    assert [e.position for e in events] == [pos_a, pos_b]
    assert [e.payload().content for e in events] == ["A", "B"]
    assert events[0].tx_id < events[1].tx_id


def test_read_after_orders_by_transaction_then_position(engine, tenant):
    """A transaction that got its id first but inserted last is read first: (tx_id, position) order."""
    start = committed_head(engine)
    with engine.connect() as conn_x, engine.connect() as conn_y:
        tx_x = conn_x.begin()
        xid_x = conn_x.execute(text("SELECT pg_current_xact_id()::text::bigint")).scalar_one()  # takes an id
        with conn_y.begin():
            (pos_y,) = append(conn_y, tenant, [mem_event("Y")], {})
        (pos_x,) = append(conn_x, tenant, [mem_event("X")], {})
        tx_x.commit()
    assert pos_y < pos_x
    with engine.connect() as reader:
        events = mine(read_after(reader, start, MEMORY_TYPES, 10_000), tenant)
    assert [e.payload().content for e in events] == ["X", "Y"]
    assert events[0].tx_id == xid_x
    # Resuming from X's checkpoint still yields Y, although Y's position is lower.
    with engine.connect() as reader:
        rest = mine(read_after(reader, Checkpoint(events[0].tx_id, events[0].position), MEMORY_TYPES, 10), tenant)
    assert [e.position for e in rest] == [pos_y]


def test_read_after_pages_without_gaps_or_repeats(engine, tenant):
    start = committed_head(engine)
    expected = []
    for batch in range(4):
        with engine.begin() as conn:
            expected += append(conn, tenant, [mem_event(f"{batch}-{i}") for i in range(5)], {})
            append(conn, tenant, [recall_event()], {})  # other types are skipped by the type filter
    seen = []
    checkpoint = start
    with engine.connect() as reader:
        while True:
            page = read_after(reader, checkpoint, MEMORY_TYPES, 3)
            if not page:
                break
            assert len(page) <= 3
            seen += [e.position for e in mine(page, tenant)]
            checkpoint = Checkpoint(page[-1].tx_id, page[-1].position)
        assert seen == expected
        assert all(e.type == "RecallServed" for e in mine(read_after(reader, start, ("RecallServed",), 100), tenant))
        assert len(mine(read_after(reader, start, ("RecallServed",), 100), tenant)) == 4
        assert len(mine(read_after(reader, start, ("MemoryRecorded", "RecallServed"), 100), tenant)) == 24


def test_read_after_until_is_inclusive_and_bounded(engine, tenant):
    start = committed_head(engine)
    with engine.begin() as conn:
        append(conn, tenant, [mem_event(str(i)) for i in range(6)], {})
    with engine.connect() as reader:
        events = mine(read_after(reader, start, MEMORY_TYPES, 100), tenant)
        until = Checkpoint(events[2].tx_id, events[2].position)
        bounded = mine(read_after(reader, start, MEMORY_TYPES, 100, until=until), tenant)
        assert [e.position for e in bounded] == [e.position for e in events[:3]]
        assert [e.position for e in mine(read_after(reader, until, MEMORY_TYPES, 100, until=until), tenant)] == []


def test_checkpoint_orders_by_transaction_first():
    assert Checkpoint(1, 100) < Checkpoint(2, 1)
    assert Checkpoint(2, 1) < Checkpoint(2, 2)
    assert Checkpoint() == Checkpoint(0, 0)


# --- concurrent appenders while projecting ---------------------------------------------------------------

WRITERS, PER_WRITER, BATCH = 8, 500, 25
TOPICS = [f"topic{k} note about lisbon and the harbour number {k}" for k in range(40)]


def test_concurrent_appenders_while_projecting_apply_every_event_exactly_once(engine, tenant):
    memories, keyword, vectors = get_projector("memories"), get_projector("keyword"), get_projector("vectors")
    errors: list[BaseException] = []
    written: list[list[int]] = [[] for _ in range(WRITERS)]
    done = threading.Event()

    def writer(w: int) -> None:
        try:
            for b in range(PER_WRITER // BATCH):
                batch = [mem_event(TOPICS[(w * PER_WRITER + b * BATCH + i) % len(TOPICS)]) for i in range(BATCH)]
                with engine.begin() as conn:
                    written[w] += append(conn, tenant, batch, {"writer": w})
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    def projector_loop() -> None:
        try:
            while not done.is_set():
                catch_up(engine, memories, 200)
                catch_up(engine, keyword, 200)
                time.sleep(0.01)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    # Two runners compete for the same projections: the advisory lock must keep them from double-applying.
    runners = [threading.Thread(target=projector_loop) for _ in range(2)]
    writers = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    for t in runners + writers:
        t.start()
    for t in writers:
        t.join(120)
    done.set()
    for t in runners:
        t.join(120)
    assert not errors, errors
    total = WRITERS * PER_WRITER
    positions = [p for w in written for p in w]
    assert len(positions) == len(set(positions)) == total

    drain(engine, "memories", "keyword")
    assert scalar(engine, "SELECT count(*) FROM events WHERE tenant = :t", t=tenant) == total
    assert scalar(engine, "SELECT count(*) FROM memories WHERE tenant = :t", t=tenant) == total
    assert scalar(engine, "SELECT count(DISTINCT position) FROM memories WHERE tenant = :t", t=tenant) == total
    assert scalar(engine, "SELECT n_docs FROM keyword_stats WHERE tenant = :t", t=tenant) == total
    assert scalar(engine, "SELECT count(*) FROM keyword_docs WHERE tenant = :t", t=tenant) == total
    assert scalar(engine, "SELECT total_length FROM keyword_stats WHERE tenant = :t", t=tenant) == scalar(
        engine, "SELECT sum(length) FROM keyword_docs WHERE tenant = :t", t=tenant)
    # Document frequencies agree with the postings: no batch counted twice or lost.
    assert scalar(engine, "SELECT sum(df) FROM keyword_terms WHERE tenant = :t", t=tenant) == scalar(
        engine, "SELECT count(*) FROM keyword_postings WHERE tenant = :t", t=tenant)
    assert scalar(engine, "SELECT df FROM keyword_terms WHERE tenant = :t AND term = 'lisbon'", t=tenant) == total
    # Every memory is the one its event recorded.
    assert scalar(engine, """
        SELECT count(*) FROM events e JOIN memories m
          ON m.tenant = e.tenant AND m.memory_id = (e.data->>'memory_id')::uuid AND m.position = e.position
        WHERE e.tenant = :t""", t=tenant) == total
    with engine.connect() as conn:
        for projector in (memories, keyword):
            assert has_reached(conn, projector, max(positions))

    # The vectors projection too (few distinct texts, so the embedding cache keeps this cheap), which also
    # leaves every projection caught up for the tests that follow.
    drain(engine, "vectors")
    assert scalar(engine, "SELECT count(*) FROM memory_vectors WHERE tenant = :t", t=tenant) == total
    with engine.connect() as conn:
        assert has_reached(conn, vectors, max(positions))
