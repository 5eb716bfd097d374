"""The ingest actor never drops a queued message: a message the write path refuses is dead-lettered with its
reason (a real worker), an operator lists, retries or skips it; a lost race is retried, an unavailable database
retried without limit, anything else a bounded number of times and then dead-lettered."""

from __future__ import annotations

import uuid

import psycopg
from conftest import wait_until
from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from typer.testing import CliRunner

from domain.errors import ConcurrencyConflict, InvalidPayload, RetryableConflict
from workers.actors import MAX_CONFLICT_RETRIES, MAX_ERROR_RETRIES, _retry_ingest


def recorded(content: str, memory_id: uuid.UUID | None = None, **fields: object) -> dict:
    return {"type": "MemoryRecorded", "idempotency_key": f"k-{uuid.uuid4()}",
            "data": {"memory_id": str(memory_id or uuid.uuid4()), "content": content, "agent_id": "a"}, **fields}


def parked(engine, tenant: str) -> list:
    with engine.connect() as conn:
        return conn.execute(text("SELECT id, reason, error, status FROM ingest_dead_letters WHERE tenant = :t "
                                 "ORDER BY id"), {"t": tenant}).all()


def test_refused_messages_are_dead_lettered_with_their_reason(engine, tenant, worker):
    from workers.producer import enqueue_events

    existing = uuid.uuid4()
    enqueue_events(tenant, [recorded("Alice moved to Lisbon", existing)])
    enqueue_events(tenant, [recorded("a second recording", expected_version=1)])
    enqueue_events(tenant, [recorded("Alice moved to Porto", existing)])  # its stream exists: never appendable

    assert wait_until(lambda: len(parked(engine, tenant)) == 2, timeout=120), parked(engine, tenant)
    rows = parked(engine, tenant)
    reasons = " | ".join(r.reason for r in rows)
    assert "version 0" in reasons and "recorded once" in reasons, reasons
    assert {r.error for r in rows} == {"InvalidPayload", "ConcurrencyConflict"}
    with engine.connect() as conn:  # the good message was appended, once
        assert conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t AND type = 'MemoryRecorded'"),
                            {"t": tenant}).scalar_one() == 1

    from cli.main import app

    runner = CliRunner()
    listed = runner.invoke(app, ["ingest", "dead-letters"])
    assert listed.exit_code == 0 and all(str(r.id) in listed.output for r in rows), listed.output
    first, second = rows
    again = runner.invoke(app, ["ingest", "dead-letters", "retry", str(first.id)])
    assert again.exit_code == 1 and "failed" in again.output, again.output
    skipped = runner.invoke(app, ["ingest", "dead-letters", "skip", str(second.id)])
    assert skipped.exit_code == 0 and "skipped" in skipped.output, skipped.output
    assert [r.status for r in parked(engine, tenant)] == ["parked", "skipped"]


def test_a_parked_message_is_appended_once_on_retry(engine, tenant):
    from workers.ingest_dead_letters import park, retry

    event = recorded("the ferry leaves at nine")
    metadata = {"actor": "producer", "correlation_id": "c-1", "source": "dramatiq"}
    # As after MAX_ERROR_RETRIES failures: kept, once however often it is parked again (redelivery).
    first = park(engine, tenant, [event], metadata, "retries exhausted", "RetriesExhausted")
    assert park(engine, tenant, [event], metadata, "retries exhausted", "RetriesExhausted") == first
    done = retry(engine, first, "test")
    assert done.outcome == "retried" and done.positions and len(done.positions) == 1
    assert retry(engine, first, "test").outcome == "not_parked"
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t AND type = 'MemoryRecorded'"),
                            {"t": tenant}).scalar_one() == 1
        assert conn.execute(text("SELECT status FROM ingest_dead_letters WHERE id = :i"),
                            {"i": first}).scalar_one() == "retried"


def test_unstorable_text_in_a_message_is_kept_escaped(engine, tenant):
    from workers.ingest_dead_letters import dead_letters, park

    event = recorded("x\ud800\x00y")
    dead_id = park(engine, tenant, [event], {"actor": "producer"}, "bad text \ud800\x00", "InvalidPayload")
    with engine.connect() as conn:
        [row] = [r for r in dead_letters(conn, tenant) if r.id == dead_id]
    assert "\\ud800" in row.message and "\\u0000" in row.message and row.events() == 1


def test_which_failures_are_retried():
    down = OperationalError("SELECT 1", {}, psycopg.OperationalError("connection refused"))
    assert _retry_ingest(10_000, down)  # the database is down: keep the message queued, however long
    race = RetryableConflict("a concurrent append won the race (events_stream_version); retry")
    assert _retry_ingest(MAX_CONFLICT_RETRIES - 1, race) and not _retry_ingest(MAX_CONFLICT_RETRIES, race)
    bug = KeyError("unexpected")
    assert _retry_ingest(MAX_ERROR_RETRIES - 1, bug) and not _retry_ingest(MAX_ERROR_RETRIES, bug)
    assert not ConcurrencyConflict("stream is at version 2, expected 0").retryable
    assert not isinstance(InvalidPayload("x"), ConcurrencyConflict)
