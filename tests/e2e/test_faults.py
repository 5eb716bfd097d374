"""Faults under a steady write load, each in a bounded loop, on a stack of the module's own (tests/fault_support.py):
Redis stopped (or SIGKILLed) and restarted, PostgreSQL restarted (after a fast or an immediate shutdown, the latter
with crash recovery), a worker SIGKILLed again and again. Afterwards every acknowledged write is in the log once,
in the read models once and recalled, and `verify` finds every projection identical to a replay of the log.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
from conftest import wait_until
from fault_support import FaultStack, RecallLoad, WriteLoad, crash, wait_acked
from sqlalchemy import text

# Two cycles: each fault's clean and abrupt kind once (even cycles stop, odd ones crash), the second a restart
# of what had already been restarted.
CYCLES = 2


@pytest.fixture(scope="module")
def fault_stack() -> Iterator[FaultStack]:
    stack = FaultStack().start()
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture
def stack(fault_stack: FaultStack) -> Iterator[FaultStack]:
    yield fault_stack
    fault_stack.stop_workers()
    # Whatever a test stopped is running again for the next one.
    for server in (fault_stack.redis, fault_stack.pg):
        if server.process is None or server.process.poll() is not None:
            server.start()


def healthy(stack: FaultStack) -> bool:
    try:
        return httpx.get(f"{stack.base_url}/healthz", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def settle(stack: FaultStack) -> float:
    """Wait until every projection has applied the whole log; answers how long that took, in seconds."""
    started = time.monotonic()
    head = stack.head()
    assert wait_until(lambda: stack.caught_up(head), timeout=120, interval=0.1), "the projections did not catch up"
    return time.monotonic() - started


def assert_every_ack_recallable_once(stack: FaultStack, load: WriteLoad) -> None:
    from projections.rebuild import verify
    from projections.registry import PROJECTORS

    assert stack.engine is not None
    acked = {a.index: a for a in load.acked}
    with stack.engine.connect() as conn:
        recorded = conn.execute(text("""
            SELECT idempotency_key, data->>'memory_id' AS memory_id, position FROM events
            WHERE type = 'MemoryRecorded' AND data->>'agent_id' = :agent"""), {"agent": load.agent_id}).all()
        rows = conn.execute(text("""
            SELECT memory_id::text, content, status FROM memories WHERE agent_id = :agent"""),
            {"agent": load.agent_id}).all()
    by_key: dict[str, list[str]] = {}
    for r in recorded:
        by_key.setdefault(r.idempotency_key, []).append(r.memory_id)
    # In the log once each; nothing else but the write in flight when the load stopped (maybe committed).
    for i, a in acked.items():
        assert by_key.get(f"{load.agent_id}-{i}") == [a.memory_id], (i, by_key.get(f"{load.agent_id}-{i}"))
    extra = set(by_key) - {f"{load.agent_id}-{i}" for i in acked}
    assert extra <= {f"{load.agent_id}-{load.in_flight}"}, extra
    # In the read model once each, recallable (active), one row per content.
    memories = {r.memory_id: r for r in rows}
    assert len(memories) == len(rows) == len(recorded)
    assert len({r.content for r in rows}) == len(rows)
    for a in acked.values():
        assert a.memory_id in memories and memories[a.memory_id].status == "active", a
    # Recalled: asked for in its own words, it comes first, once.
    with httpx.Client(base_url=stack.base_url, timeout=60) as client:
        for a in acked.values():
            r = client.post("/v1/recall", json={"query": load.content(a.index), "agent_id": load.agent_id, "k": 3,
                                                "min_position": a.position})
            assert r.status_code == 200, r.text
            ids = [hit["memory_id"] for hit in r.json()["results"]]
            assert ids[:1] == [a.memory_id] and ids.count(a.memory_id) == 1, (a, ids, r.json().get("abstained"))
    for projector in PROJECTORS.values():
        report = verify(stack.engine, projector)
        assert report.identical, report


def figures(name: str, load: WriteLoad, reads: RecallLoad, catch_up_s: float) -> None:
    print(f"\n{name}: {len(load.acked)} writes acknowledged, {len(load.acked)} recallable once; writes answered "
          f"{dict(load.statuses)}, recalls {dict(reads.statuses)}; projections caught up {catch_up_s:.1f}s after "
          "the load stopped")


def test_redis_stopped_and_restarted_under_write_load(stack: FaultStack) -> None:
    worker = stack.start_worker()
    assert wait_until(lambda: healthy(stack), timeout=180), "no worker heartbeat"
    load = WriteLoad(stack.base_url, "redis-faults", interval_s=0.1).start()
    reads = RecallLoad(stack.base_url, "redis-faults").start()
    try:
        assert wait_acked(load, 5)
        for cycle in range(CYCLES):
            if cycle % 2:
                crash(stack.redis)
            else:
                stack.redis.stop()
            # Writes go on being acknowledged: the wake-up that cannot be sent does not fail them.
            assert wait_acked(load, 10), load.statuses
            # And the worker's poll projects them without Redis.
            written = load.acked[-1].position
            assert wait_until(lambda: stack.caught_up(written), timeout=60), (  # noqa: B023 - waited for here
                "the poll fallback did not project")
            assert not healthy(stack)
            stack.redis.start()
            assert wait_until(lambda: healthy(stack), timeout=60), "the worker's heartbeat did not come back"
            assert wait_acked(load, 5), load.statuses
    finally:
        load.stop()
        reads.stop()
    assert worker.proc is not None and worker.proc.poll() is None, "the worker must survive Redis restarts"
    assert set(load.statuses) == {"201"}, load.statuses
    assert set(reads.statuses) == {"200"}, reads.statuses  # a recall's hit-log wake-up does not fail it either
    catch_up_s = settle(stack)
    assert_every_ack_recallable_once(stack, load)
    figures("redis restarts", load, reads, catch_up_s)


def test_postgres_restarted_under_write_load(stack: FaultStack) -> None:
    worker = stack.start_worker()
    assert wait_until(lambda: healthy(stack), timeout=180), "no worker heartbeat"
    load = WriteLoad(stack.base_url, "postgres-faults", interval_s=0.1).start()
    reads = RecallLoad(stack.base_url, "postgres-faults").start()
    try:
        assert wait_acked(load, 5)
        for cycle in range(CYCLES):
            refused = load.statuses["503"]
            if cycle % 2:
                crash(stack.pg)  # immediate shutdown: crash recovery at the start
            else:
                stack.pg.stop()
            # Down: the API answers 503 (JSON, retry), the writer retries the same write with its key.
            assert wait_until(lambda: load.statuses["503"] >= refused + 3, timeout=30), (  # noqa: B023
                load.statuses)
            stack.pg.start()
            assert wait_acked(load, 10), load.statuses  # the API's pool reconnects
    finally:
        load.stop()
        reads.stop()
    assert worker.proc is not None and worker.proc.poll() is None, "the worker must outlive the database's restarts"
    assert set(load.statuses) <= {"201", "503"}, load.statuses
    assert set(reads.statuses) <= {"200", "503"} and reads.statuses["200"], reads.statuses
    assert load.unavailable_bodies and all(b["error"] == "service_unavailable" for b in load.unavailable_bodies)
    catch_up_s = settle(stack)  # the worker reconnected: it projects what was written after the restarts
    assert_every_ack_recallable_once(stack, load)
    figures("postgres restarts", load, reads, catch_up_s)


def test_worker_sigkilled_in_a_loop_under_write_load(stack: FaultStack) -> None:
    assert stack.engine is not None

    def applied() -> int:
        with stack.engine.connect() as conn:  # type: ignore[union-attr]
            return conn.execute(text("SELECT coalesce(sum(position), 0) FROM projection_checkpoints")).scalar_one()

    load = WriteLoad(stack.base_url, "worker-faults", interval_s=0.1).start()
    reads = RecallLoad(stack.base_url, "worker-faults").start()
    try:
        for _ in range(CYCLES):
            assert wait_acked(load, 10)  # a backlog for the next worker
            before = applied()
            # Small batches: the kill lands between and inside batches, not after one big one.
            worker = stack.start_worker(ENGRAMLOG_PROJECTION_BATCH="10")
            assert wait_until(lambda: applied() > before, timeout=180), (  # noqa: B023 - waited for here
                "the worker did not project")
            worker.kill()
        stack.start_worker()
        assert wait_acked(load, 10)
    finally:
        load.stop()
        reads.stop()
    assert set(load.statuses) == {"201"}, load.statuses
    assert set(reads.statuses) == {"200"}, reads.statuses
    catch_up_s = settle(stack)
    assert_every_ack_recallable_once(stack, load)
    figures("worker SIGKILLs", load, reads, catch_up_s)
