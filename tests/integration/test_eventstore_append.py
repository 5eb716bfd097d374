"""The append path on the real log: atomic batches, idempotency, optimistic concurrency, immutability."""

from __future__ import annotations

import threading
import uuid

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, IntegrityError

from domain.errors import ConcurrencyConflict, ContentTooLarge, InvalidPayload, UnknownEventType
from domain.events import NewEvent, memory_stream
from eventstore.append import append
from eventstore.codec import SEAL, open_events
from eventstore.read import COLUMNS, row_to_event
from infra.settings import get_settings
from services.append_events import EventInput, append_events


def memory(content: str = "Alice moved to Lisbon", **extra: object) -> EventInput:
    return EventInput(type="MemoryRecorded", data={"memory_id": str(uuid.uuid4()), "content": content, **extra})


# The governor's decisions, appended after the batch in its transaction, are left out: these are the batch's.
OWN = "tenant = :t AND type NOT IN ('MemoryAdmitted', 'MemoryReinforced', 'MemorySuperseded', 'MemoryStatusChanged')"


def count(engine, tenant: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text(f"SELECT count(*) FROM events WHERE {OWN}"), {"t": tenant}).scalar_one()


def rows(engine, tenant: str) -> list:
    with engine.connect() as conn:
        return conn.execute(text(f"SELECT * FROM events WHERE {OWN} ORDER BY position"), {"t": tenant}).all()


def opened(engine, tenant: str) -> list:
    """The tenant's own events as the event store reads them: content opened (eventstore/codec.py)."""
    with engine.connect() as conn:
        found = conn.execute(text(f"SELECT {COLUMNS} FROM events e WHERE {OWN} ORDER BY position"), {"t": tenant})
        return open_events(conn, [row_to_event(r) for r in found], keep_forgotten=True)


def new_event(stream: str, expected: int | None = None, key: str | None = None) -> NewEvent:
    mid = uuid.uuid4()
    return NewEvent(type="MemoryRecorded", stream_id=stream, data={"memory_id": str(mid), "content": "x"},
                    expected_version=expected, idempotency_key=key)


# --- batches -------------------------------------------------------------------------------------------------

def test_batch_is_appended_in_order_with_consecutive_stream_versions(engine, tenant):
    items = [memory(f"memory {i}") for i in range(5)]
    positions = append_events(engine, tenant, items, {"source": "test"})
    assert positions == sorted(positions) and len(set(positions)) == 5
    stored = rows(engine, tenant)
    assert [r.position for r in stored] == positions
    assert all("content" not in r.data and SEAL in r.data for r in stored)  # sealed in the table (codec.py)
    assert [r.data["content"] for r in opened(engine, tenant)] == [f"memory {i}" for i in range(5)]
    for r, item in zip(stored, items, strict=True):
        assert r.stream_id == memory_stream(uuid.UUID(item.data["memory_id"]))
        assert r.stream_version == 1 and r.type == "MemoryRecorded" and r.schema_version == 2
    assert len({r.tx_id for r in stored}) == 1  # one transaction


def test_batch_with_one_invalid_event_writes_nothing(engine, tenant):
    bad = EventInput(type="MemoryRecorded", data={"memory_id": str(uuid.uuid4()), "content": ""})
    with pytest.raises(InvalidPayload, match="content"):
        append_events(engine, tenant, [memory("one"), memory("two"), bad, memory("four")], {})
    assert count(engine, tenant) == 0


def test_batch_with_unknown_type_writes_nothing(engine, tenant):
    with pytest.raises(UnknownEventType, match="'Nope'"):
        append_events(engine, tenant, [memory("one"), EventInput(type="Nope", data={}, stream_id="s")], {})
    assert count(engine, tenant) == 0


def test_batch_with_oversized_content_writes_nothing(engine, tenant):
    limit = get_settings().limits.max_content_chars
    assert append_events(engine, tenant, [memory("a" * limit)], {})  # exactly at the limit: accepted
    with pytest.raises(ContentTooLarge, match=f"the limit is {limit}"):
        append_events(engine, tenant, [memory("ok"), memory("a" * (limit + 1))], {})
    assert count(engine, tenant) == 1


def test_empty_and_oversized_batches_are_refused(engine, tenant):
    with pytest.raises(InvalidPayload, match="at least one event"):
        append_events(engine, tenant, [], {})
    limit = get_settings().limits.max_batch
    with pytest.raises(InvalidPayload, match=f"at most {limit}"):
        append_events(engine, tenant, [memory(str(i)) for i in range(limit + 1)], {})
    assert count(engine, tenant) == 0


def test_batch_failing_inside_the_database_writes_nothing(engine, tenant):
    # Two events with the same event_id: the second violates a constraint after the first was inserted.
    first = new_event(f"s-{uuid.uuid4()}")
    clash = NewEvent(type="MemoryRecorded", stream_id=f"s-{uuid.uuid4()}", data=first.data, event_id=first.event_id)
    with pytest.raises(IntegrityError), engine.begin() as conn:
        append(conn, tenant, [new_event(f"s-{uuid.uuid4()}"), first, clash], {})
    assert count(engine, tenant) == 0


def test_memory_recorded_on_a_foreign_stream_is_refused(engine, tenant):
    with pytest.raises(InvalidPayload, match="belongs on stream"):
        append_events(engine, tenant, [EventInput(type="MemoryRecorded", stream_id="other",
                                                  data={"memory_id": str(uuid.uuid4()), "content": "x"})], {})
    assert count(engine, tenant) == 0


def test_stream_id_required_for_non_memory_events(engine, tenant):
    data = {"recall_id": str(uuid.uuid4()), "query": "q", "k": 1, "latency_ms": 1.0}
    with pytest.raises(InvalidPayload, match="stream_id is required"):
        append_events(engine, tenant, [EventInput(type="RecallServed", data=data)], {"actor": "system:test"})
    assert count(engine, tenant) == 0


# --- idempotency ---------------------------------------------------------------------------------------------

def test_repeated_batch_idempotency_key_answers_original_positions_and_writes_nothing(engine, tenant):
    key = f"batch-{uuid.uuid4()}"
    first = append_events(engine, tenant, [memory("a"), memory("b"), memory("c")], {}, idempotency_key=key)
    # The retry carries fresh memory ids (a producer regenerating them): still nothing new is written.
    again = append_events(engine, tenant, [memory("a"), memory("b"), memory("c")], {}, idempotency_key=key)
    assert again == first
    assert count(engine, tenant) == 3
    assert [r.idempotency_key for r in rows(engine, tenant)] == [f"{key}:0", f"{key}:1", f"{key}:2"]


def test_repeated_event_idempotency_key_answers_original_position(engine, tenant):
    item = EventInput(type="MemoryRecorded", data={"memory_id": str(uuid.uuid4()), "content": "once"},
                      idempotency_key="k-1")
    (position,) = append_events(engine, tenant, [item], {})
    assert append_events(engine, tenant, [item], {}) == [position]
    assert count(engine, tenant) == 1


def test_idempotency_keys_are_per_tenant(engine, tenant):
    other = f"{tenant}-other"
    item = EventInput(type="MemoryRecorded", data={"memory_id": str(uuid.uuid4()), "content": "x"},
                      idempotency_key="shared-key")
    (a,) = append_events(engine, tenant, [item], {})
    (b,) = append_events(engine, other, [item], {})
    assert a != b and count(engine, tenant) == 1 and count(engine, other) == 1


def test_partly_repeated_keys_are_a_conflict_and_write_nothing(engine, tenant):
    append_events(engine, tenant, [memory("a")], {}, idempotency_key="b1")  # writes key b1:0
    with pytest.raises(ConcurrencyConflict, match="idempotency keys"):
        append_events(engine, tenant, [memory("a"), memory("new")], {}, idempotency_key="b1")
    assert count(engine, tenant) == 1


def test_concurrent_appends_with_the_same_key_write_once(engine, tenant):
    item = EventInput(type="MemoryRecorded", data={"memory_id": str(uuid.uuid4()), "content": "race"},
                      idempotency_key="racy")
    results: list[object] = []
    barrier = threading.Barrier(6)

    def go() -> None:
        barrier.wait()
        try:
            results.append(append_events(engine, tenant, [item], {}))
        except Exception as exc:  # noqa: BLE001
            results.append(exc)

    threads = [threading.Thread(target=go) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert count(engine, tenant) == 1
    (position,) = [r.position for r in rows(engine, tenant)]
    # Every caller either got the original position or a retryable 409: never a second copy, never a 500.
    for r in results:
        assert r == [position] or isinstance(r, ConcurrencyConflict), r
    assert [position] in results


# --- optimistic concurrency ----------------------------------------------------------------------------------

def test_expected_version_matches_then_mismatches(engine, tenant):
    stream = f"stream-{uuid.uuid4()}"
    data = {"recall_id": str(uuid.uuid4()), "query": "q", "k": 1, "latency_ms": 1.0}
    ev = lambda expected: EventInput(type="RecallServed", data=data, stream_id=stream,  # noqa: E731
                                     expected_version=expected)
    system = {"actor": "system:test"}  # RecallServed is the system's (recall's) own event
    append_events(engine, tenant, [ev(0)], system)
    append_events(engine, tenant, [ev(1), ev(None), ev(None)], system)  # versions 2, 3, 4
    with pytest.raises(ConcurrencyConflict) as err:
        append_events(engine, tenant, [ev(1)], system)
    assert "is at version 4, expected 1" in str(err.value) and err.value.status_code == 409
    with pytest.raises(ConcurrencyConflict):
        append_events(engine, tenant, [ev(0)], system)
    assert [r.stream_version for r in rows(engine, tenant)] == [1, 2, 3, 4]


def test_expected_version_conflict_mid_batch_writes_nothing(engine, tenant):
    stream = f"stream-{uuid.uuid4()}"
    with engine.begin() as conn:
        append(conn, tenant, [new_event(stream, expected=0)], {})
    with pytest.raises(ConcurrencyConflict), engine.begin() as conn:
        append(conn, tenant, [new_event(f"s-{uuid.uuid4()}"), new_event(stream, expected=5)], {})
    assert count(engine, tenant) == 1


def test_memory_recorded_twice_on_its_stream_is_a_conflict(engine, tenant):
    item = memory("only once")
    append_events(engine, tenant, [item], {})
    with pytest.raises(ConcurrencyConflict):
        append_events(engine, tenant, [item], {})  # no idempotency key: the stream already exists
    assert count(engine, tenant) == 1


def test_concurrent_writers_on_one_stream_one_wins(engine, tenant):
    stream = f"stream-{uuid.uuid4()}"
    start = threading.Barrier(2)
    inserted = threading.Event()
    outcome: dict[str, object] = {}

    def first() -> None:
        with engine.begin() as conn:
            start.wait()
            outcome["first"] = append(conn, tenant, [new_event(stream, expected=0)], {})
            inserted.set()
            # Hold the transaction a moment so the second writer's insert must wait on it.
            conn.execute(text("SELECT pg_sleep(0.3)"))

    def second() -> None:
        start.wait()
        inserted.wait(10)
        try:
            with engine.begin() as conn:
                outcome["second"] = append(conn, tenant, [new_event(stream, expected=0)], {})
        except ConcurrencyConflict as exc:
            outcome["second"] = exc

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert isinstance(outcome["second"], ConcurrencyConflict), outcome
    assert count(engine, tenant) == 1


# --- immutability --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sql", [
    "UPDATE events SET data = '{}'::jsonb WHERE tenant = :t",
    "UPDATE events SET tenant = 'stolen' WHERE tenant = :t",
    "DELETE FROM events WHERE tenant = :t",
    "TRUNCATE events",
    "TRUNCATE events CASCADE",
])
def test_log_is_append_only(engine, tenant, sql):
    append_events(engine, tenant, [memory("permanent")], {})
    before = rows(engine, tenant)
    with engine.connect() as conn:
        trans = conn.begin()
        try:
            conn.execute(text("SET LOCAL lock_timeout = '10s'"))
            with pytest.raises(DBAPIError) as err:
                conn.execute(text(sql), {"t": tenant})
            assert "append-only" in str(err.value)
        finally:
            trans.rollback()  # even if the trigger let it through, nothing is lost for other tests
    assert rows(engine, tenant) == before


def test_immutability_triggers_are_installed_and_enabled(engine, tenant):
    append_events(engine, tenant, [memory(str(i)) for i in range(3)], {})
    with engine.connect() as conn, conn.begin():
        triggers = conn.execute(text(
            "SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'events'::regclass AND NOT tgisinternal"
        )).all()
    assert {name for name, _ in triggers} >= {"events_no_update_delete", "events_no_truncate"}
    assert all(enabled == "O" for _, enabled in triggers)


# --- metadata ------------------------------------------------------------------------------------------------

def test_metadata_is_stored_with_every_event_of_the_batch(engine, tenant):
    meta = {"actor": "agent-7", "correlation_id": str(uuid.uuid4()), "causation_id": None, "source": "test",
            "ünï": "😀"}
    append_events(engine, tenant, [memory("a"), memory("b")], meta)
    stored = rows(engine, tenant)
    assert [r.metadata for r in stored] == [meta, meta]
    assert all(r.recorded_at is not None and r.occurred_at is not None and r.tx_id for r in stored)


def test_occurred_at_is_kept_when_given(engine, tenant):
    from datetime import UTC, datetime

    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    item = EventInput(type="MemoryRecorded", data={"memory_id": str(uuid.uuid4()), "content": "x"},
                      occurred_at=when)
    append_events(engine, tenant, [item], {})
    (row,) = rows(engine, tenant)
    assert row.occurred_at == when and row.recorded_at > when


def test_positions_are_answered_for_direct_appends(engine, tenant):
    with engine.begin() as conn:
        assert append(conn, tenant, [], {}) == []
        positions = append(conn, tenant, [new_event(f"s-{uuid.uuid4()}") for _ in range(3)], {"k": 1})
    assert [r.position for r in rows(engine, tenant)] == positions


def test_a_stream_key_made_by_a_concurrent_append_is_read_back_and_used(engine, tenant):
    """Two appends open one new stream at once: the second waits on the first's key (ON CONFLICT), whose row its
    statement's snapshot cannot see, reads it back, and both seal under the one key."""
    from eventstore.codec import _stream_keys

    stream = f"recall-{uuid.uuid4()}"
    first = engine.connect()
    tx = first.begin()
    [(key_id, _)] = _stream_keys(first, tenant, {stream}).values()
    got: dict[str, object] = {}

    def second() -> None:
        with engine.begin() as conn:
            got.update(_stream_keys(conn, tenant, {stream}))

    waiting = threading.Thread(target=second)
    waiting.start()
    waiting.join(timeout=1.0)
    assert waiting.is_alive()  # held on the first append's uncommitted key
    tx.commit()
    first.close()
    waiting.join(timeout=10)
    assert not waiting.is_alive()
    assert got[stream][0] == key_id
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM subject_keys WHERE tenant = :t AND stream_id = :s"),
                            {"t": tenant, "s": stream}).scalar_one() == 1


def test_a_keyless_append_that_loses_a_race_for_the_stream_version_is_retryable_and_writes_nothing(engine, tenant):
    """Without idempotency keys there is nothing to look up after the conflict, so no savepoint is taken: the
    loser's transaction is given up with RetryableConflict (its caller retries in a new one)."""
    from domain.errors import RetryableConflict

    stream = f"probe-{uuid.uuid4()}"

    def event() -> NewEvent:
        return NewEvent("RecallServed", stream, {"recall_id": str(uuid.uuid4()), "query": "q", "k": 1,
                                                 "results": []})

    first = engine.connect()
    tx = first.begin()
    append(first, tenant, [event()], {"source": "test"})
    failed: list[BaseException] = []

    def second() -> None:
        try:
            with engine.begin() as conn:
                append(conn, tenant, [event()], {"source": "test"})
        except BaseException as exc:  # noqa: BLE001 (the thread's outcome is asserted below)
            failed.append(exc)

    racer = threading.Thread(target=second)
    racer.start()
    racer.join(timeout=1.0)
    assert racer.is_alive()  # waits on the first append's uncommitted version 1
    tx.commit()
    first.close()
    racer.join(timeout=10)
    assert len(failed) == 1 and isinstance(failed[0], RetryableConflict), failed
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t AND stream_id = :s"),
                            {"t": tenant, "s": stream}).scalar_one() == 1
