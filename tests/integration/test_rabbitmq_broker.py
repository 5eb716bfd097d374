"""The queue on RabbitMQ (ENGRAMLOG_BROKER=rabbitmq: Dramatiq's own RabbitmqBroker): a producer's message is
ingested and projected by a real worker whose only way to hear of it is RabbitMQ (its poll is an hour away), so the
ingest message and the projections' wake-up both went through the broker. The server is the test's own
(tests/rabbitmq_support.py); skipped with the reason where rabbitmq-server is not installed."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from conftest import wait_until
from dramatiq import Message
from rabbitmq_support import RabbitServer, missing
from sqlalchemy import text

pytestmark = pytest.mark.skipif(missing() is not None, reason=missing() or "")


@pytest.fixture(scope="module")
def rabbit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RabbitServer]:
    server = RabbitServer(tmp_path_factory.mktemp("rabbitmq")).start()
    yield server
    server.stop()


def test_a_producer_message_on_rabbitmq_is_ingested_and_projected(engine, tenant, start_worker, rabbit):
    from infra.broker import make_rabbitmq_broker

    start_worker(extra_env={"ENGRAMLOG_BROKER": "rabbitmq", "RABBITMQ_URL": rabbit.url,
                            "ENGRAMLOG_POLL_INTERVAL_S": "3600", "ENGRAMLOG_SCHEDULER_ENABLED": "0"})
    memory_id = str(uuid.uuid4())
    events = [{"type": "MemoryRecorded", "idempotency_key": f"rabbit-{memory_id}",
               "data": {"memory_id": memory_id, "content": "the ferry to the island leaves from pier seven"}}]
    queue = make_rabbitmq_broker(rabbit.url)
    try:  # what workers/producer.py sends, on the RabbitMQ broker
        queue.enqueue(Message(queue_name="ingest", actor_name="ingest_events",
                              args=(tenant, events, {"actor": "producer", "source": "dramatiq"}), kwargs={},
                              options={}))
    finally:
        queue.close()

    def memory_projected() -> bool:
        with engine.connect() as conn:
            return conn.execute(text("SELECT count(*) FROM memories WHERE tenant = :t AND memory_id = :m"),
                                {"t": tenant, "m": memory_id}).scalar_one() == 1

    assert wait_until(memory_projected, timeout=180, interval=0.2)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t AND type = 'MemoryRecorded'"),
                            {"t": tenant}).scalar_one() == 1
