"""Failures of the moving parts: a worker SIGKILLed mid-batch, Redis stopped, producers redelivering.

Real Dramatiq worker processes, a real redis-server (stopped and restarted on the same socket), and real
PostgreSQL. Every check is an exact count for a tenant of the test's own.
"""

from __future__ import annotations

import time
import uuid

import pytest
from conftest import _STATE, wait_until
from sqlalchemy import text

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database


def counts(engine, tenant: str) -> dict[str, int]:
    sql = """
    SELECT (SELECT count(*) FROM events WHERE tenant = :t AND type = 'MemoryRecorded') AS events,
           (SELECT count(*) FROM memories WHERE tenant = :t) AS memories,
           (SELECT count(*) FROM keyword_docs WHERE tenant = :t) AS keyword_docs,
           (SELECT count(*) FROM memory_vectors WHERE tenant = :t) AS memory_vectors,
           (SELECT coalesce(sum(n_docs), 0) FROM keyword_stats WHERE tenant = :t) AS n_docs
    """
    with engine.connect() as conn:
        return dict(conn.execute(text(sql), {"t": tenant}).one()._mapping)


def assert_applied_exactly_once(engine, tenant: str, expected: int) -> None:
    assert counts(engine, tenant) == {"events": expected, "memories": expected, "keyword_docs": expected,
                                      "memory_vectors": expected, "n_docs": expected}
    with engine.connect() as conn:
        # Every event's memory once, at its own position; BM25 statistics consistent with the postings.
        missing = conn.execute(text("""
            SELECT count(*) FROM events e LEFT JOIN memories m
              ON m.tenant = e.tenant AND m.memory_id = (e.data->>'memory_id')::uuid AND m.position = e.position
            WHERE e.tenant = :t AND e.type = 'MemoryRecorded' AND m.memory_id IS NULL"""), {"t": tenant}).scalar_one()
        assert missing == 0
        total_length, doc_lengths = conn.execute(text("""
            SELECT (SELECT total_length FROM keyword_stats WHERE tenant = :t),
                   (SELECT sum(length) FROM keyword_docs WHERE tenant = :t)"""), {"t": tenant}).one()
        assert total_length == doc_lengths
        df_sum, postings = conn.execute(text("""
            SELECT (SELECT sum(df) FROM keyword_terms WHERE tenant = :t),
                   (SELECT count(*) FROM keyword_postings WHERE tenant = :t)"""), {"t": tenant}).one()
        assert df_sum == postings


def wait_projected(engine, position: int, timeout: float = 60) -> bool:
    from projections.registry import PROJECTORS
    from projections.runner import has_reached

    def reached() -> bool:
        with engine.connect() as conn:
            return all(has_reached(conn, p, position) for p in PROJECTORS.values())

    return wait_until(reached, timeout=timeout, interval=0.1)


WORDS = ["harbour", "lantern", "orchard", "violin", "glacier", "meadow", "copper", "falcon", "tundra", "velvet",
         "quarry", "saffron", "ember", "lagoon", "thistle", "cobalt", "prairie", "marble", "juniper", "canyon"]


def sentence(i: int, tenant: str) -> str:
    # Distinct, longish texts (so embedding takes real time and the embedding cache cannot shortcut them).
    words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(40)]
    return f"{tenant} memory {i}: " + " ".join(words)


@pytest.mark.timeout(900)  # a cold worker embedding 600 texts on 2 busy shared cores
def test_worker_sigkilled_mid_batch_loses_nothing_and_doubles_nothing(engine, tenant, start_worker):
    from services.remember import MemoryInput, remember

    # Four projection batches of 150: the kill lands once the first has committed, with the rest still to do.
    total = 600
    for start in range(0, total, 300):
        # must_keep: the salience gate would embed them on the write path (and merge these near copies).
        remember(engine, tenant, [MemoryInput(content=sentence(i, tenant), agent_id=f"ag{i % 5}", must_keep=True)
                                  for i in range(start, start + 300)], {"source": "test"})
    assert counts(engine, tenant)["events"] == total

    env = {"ENGRAMLOG_PROJECTION_BATCH": "150"}
    first = start_worker(extra_env=env)
    # The vectors projection (embedding each text) is the slow one: kill the worker once it has committed
    # some of this tenant's vectors and is working on the next batch.
    assert wait_until(lambda: counts(engine, tenant)["memory_vectors"] >= 150, timeout=300, interval=0.02)
    first.kill()
    at_kill = counts(engine, tenant)
    print(f"killed with {at_kill}")
    assert 0 < at_kill["memory_vectors"] < total, f"the worker was not killed mid-projection: {at_kill}"
    # Whole batches only: the vectors committed are exactly the events up to the committed checkpoint.
    with engine.connect() as conn:
        below_checkpoint = conn.execute(text("""
            SELECT count(*) FROM events e, projection_checkpoints c
            WHERE c.name = 'vectors' AND e.tenant = :t AND e.type = 'MemoryRecorded'
              AND (e.tx_id, e.position) <= (c.tx_id, c.position)"""), {"t": tenant}).scalar_one()
    assert below_checkpoint == at_kill["memory_vectors"]
    time.sleep(1.0)
    assert counts(engine, tenant) == at_kill  # dead: nothing moves, no half batch was committed

    start_worker(extra_env=env)  # liveness bounds, generous: a cold worker embeds 450 texts on busy shared cores
    assert wait_until(lambda: counts(engine, tenant)["memory_vectors"] == total, timeout=600, interval=0.2)
    with engine.connect() as conn:
        last = conn.execute(text("SELECT max(position) FROM events WHERE tenant = :t"), {"t": tenant}).scalar_one()
    assert wait_projected(engine, last)
    assert_applied_exactly_once(engine, tenant, total)


@pytest.fixture
def redis_server():
    server = _STATE.get("redis")
    if server is None:
        pytest.skip("REDIS_URL points at an external Redis; this test stops and restarts the embedded one")
    yield server
    if server.process is None or server.process.poll() is not None:  # type: ignore[attr-defined]
        server.start()  # type: ignore[attr-defined]


def test_redis_down_appends_succeed_and_projections_catch_up(http, engine, start_worker, redis_server):
    from infra.broker import broker

    # A warm worker first (model loaded), so the outage is the only thing being tested.
    w = start_worker()
    warm = http.post("/v1/memories", json={"content": "before the outage", "agent_id": "redis-test"})
    assert warm.status_code == 201
    assert wait_projected(engine, warm.json()["position"], timeout=120)

    redis_server.stop()
    try:
        with pytest.raises(Exception):  # noqa: B017 - any connection error: Redis really is gone
            broker.client.ping()
        tag = uuid.uuid4().hex[:8]
        started = time.monotonic()
        during = http.post("/v1/memories/batch", json={"memories": [
            {"content": f"Written while Redis was down, the zebra {tag} crossed the river", "agent_id": "redis-test",
             "must_keep": True},  # these short notes are alike: the salience gate would keep only some
            {"content": f"Second outage note about a purple kettle {tag}", "agent_id": "redis-test",
             "must_keep": True}]})
        assert during.status_code == 201, during.text
        one = http.post("/v1/memories", json={"content": f"Third outage note: cedar canoe {tag}", "must_keep": True,
                                              "agent_id": "redis-test"})
        assert one.status_code == 201, one.text
        assert time.monotonic() - started < 10, "appends must not hang on the missing broker"
        health = http.get("/healthz")
        assert health.status_code == 503 and "redis" in health.json()["down"], health.text
        # The worker's poll keeps projecting without Redis: the outage writes become recallable during it.
        position = one.json()["position"]
        assert wait_projected(engine, position, timeout=30)
        r = http.post("/v1/recall", json={"query": f"zebra {tag} river", "agent_id": "redis-test", "k": 1,
                                          "min_position": position})
        assert r.status_code == 200, r.text
        assert r.json()["results"][0]["memory_id"] == during.json()["memories"][0]["memory_id"]
        assert w.proc.poll() is None, "the worker must survive a Redis outage"
    finally:
        redis_server.start()

    # Back: wake-ups and heartbeats flow again, and everything written during the outage is there.
    assert wait_until(lambda: http.get("/healthz").status_code == 200, timeout=30), http.get("/healthz").text
    after = http.post("/v1/memories", json={"content": f"After the outage, a walrus {tag} sang", "must_keep": True,
                                            "agent_id": "redis-test"})
    assert after.status_code == 201
    r = http.post("/v1/recall", json={"query": f"walrus {tag}", "agent_id": "redis-test", "k": 1,
                                      "min_position": after.json()["position"]})
    assert r.status_code == 200, r.text
    assert r.json()["results"][0]["memory_id"] == after.json()["memory_id"]
    for query, memory in ((f"purple kettle {tag}", during.json()["memories"][1]), (f"cedar canoe {tag}", one.json())):
        hit = http.post("/v1/recall", json={"query": query, "agent_id": "redis-test", "k": 1}).json()["results"]
        assert hit and hit[0]["memory_id"] == memory["memory_id"]


def test_producer_enqueue_is_appended_once_even_when_sent_twice(engine, tenant, worker):
    from domain.errors import UnknownEventType
    from infra.broker import broker
    from workers.producer import enqueue_events

    dead_before = broker.client.zcard("dramatiq:ingest.XQ")
    ids = [uuid.uuid4() for _ in range(4)]
    events = [{"type": "MemoryRecorded", "idempotency_key": f"doc-7#{n}",
               "data": {"memory_id": str(i), "content": f"producer chunk {n} about the silver harbour"}}
              for n, i in enumerate(ids)]
    # A redelivery (or a producer retrying) sends the same keys again, twice, possibly concurrently:
    # whichever message the worker takes first is the one appended.
    correlation_ids = {enqueue_events(tenant, events) for _ in range(3)}
    # Keys generated by the producer when missing: every event sent carries one.
    unkeyed = [{"type": "MemoryRecorded", "data": {"memory_id": str(uuid.uuid4()), "content": "no key given"}}]
    enqueue_events(tenant, unkeyed)
    with pytest.raises(UnknownEventType):
        enqueue_events(tenant, [{"type": "NoSuchEvent", "data": {}}])  # refused before it is sent

    broker.join("ingest", timeout=120_000)  # every message processed and acknowledged
    with engine.connect() as conn:
        rows = conn.execute(text("""
            SELECT idempotency_key, data->>'memory_id' AS memory_id, metadata FROM events
            WHERE tenant = :t AND type = 'MemoryRecorded' ORDER BY position"""), {"t": tenant}).all()
    assert len(rows) == 5, rows
    assert all(r.idempotency_key for r in rows)
    keyed = [r for r in rows if r.idempotency_key.startswith("doc-7#")]
    assert sorted(r.idempotency_key for r in keyed) == [f"doc-7#{n}" for n in range(4)]
    assert {r.memory_id for r in keyed} == {str(i) for i in ids}
    assert {r.metadata["source"] for r in rows} == {"dramatiq"}
    assert len({r.metadata["correlation_id"] for r in keyed}) == 1
    assert {r.metadata["correlation_id"] for r in keyed} <= correlation_ids
    # Nothing failed into the dead-letter queue either.
    assert broker.client.zcard("dramatiq:ingest.XQ") == dead_before
    # And the worker projects what it ingested.
    with engine.connect() as conn:
        last = conn.execute(text("SELECT max(position) FROM events WHERE tenant = :t"), {"t": tenant}).scalar_one()
    assert wait_projected(engine, last, timeout=120)
    assert_applied_exactly_once(engine, tenant, 5)
