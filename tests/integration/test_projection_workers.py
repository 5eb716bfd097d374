"""Two worker processes share the projections (projections/partitions.py); one is SIGKILLed in the middle of a
batch and restarted: no event applied twice or skipped, the survivor takes the dead one's partitions over.

Real `dramatiq workers.main` processes, each with ENGRAMLOG_WORKERS=2 (two partitions per projection) and its own
application_name (PGAPPNAME), so pg_locks tells whose batch holds which partition.
"""

from __future__ import annotations

import uuid

import pytest
from conftest import wait_until
from sqlalchemy import text
from test_worker_failures import assert_applied_exactly_once, counts, sentence, wait_projected

from projections import partitions as parts
from projections.rebuild import verify
from projections.registry import PROJECTORS, get_projector
from projections.runner import catch_up, partitions_for

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database

# Whose transaction holds a partition's lock (exclusive, one bigint key: hashtext of the partition's key).
_HOLDERS = text("""
SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.mode = 'ExclusiveLock' AND l.objsubid = 1
  AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtext(:key)::bigint
""")

# A connection of `app` waiting on a table lock in its INSERT into memory_vectors, inside a vectors batch (it holds
# a partition's claim).
_BLOCKED_MID_BATCH = text("""
SELECT count(*) FROM pg_stat_activity a
WHERE a.application_name = :app AND a.wait_event_type = 'Lock' AND a.query LIKE '%INSERT INTO memory_vectors%'
  AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'advisory' AND l.granted)
""")


def holders(engine, name: str, partition: parts.Partition) -> list[str]:
    with engine.connect() as conn:
        return list(conn.execute(_HOLDERS, {"key": parts.partition_key(name, partition)}).scalars())


def tenants_per_partition(engine, n: int) -> list[str]:
    found: dict[int, str] = {}
    with engine.connect() as conn:
        while len(found) < n:
            t = f"w-{uuid.uuid4().hex[:10]}"
            found.setdefault(conn.execute(text("SELECT engramlog_partition(:t, :n)"), {"t": t, "n": n}).scalar_one(), t)
    return [found[i] for i in range(n)]


@pytest.mark.timeout(900)  # two worker processes embedding on 2 shared cores
def test_two_workers_one_killed_mid_batch_and_restarted_apply_each_event_once(engine, start_worker):
    from services.remember import MemoryInput, remember

    per_tenant = 50  # 5 batches of 10 per tenant (its partition): the kill lands inside one, the others go on
    tenants = tenants_per_partition(engine, 2)  # one tenant in each of the two partitions
    for tenant in tenants:
        remember(engine, tenant, [MemoryInput(content=sentence(i, tenant), agent_id=f"ag{i % 3}", must_keep=True)
                                  for i in range(per_tenant)], {"source": "test"})
    env = {"ENGRAMLOG_WORKERS": "2", "ENGRAMLOG_PROJECTION_BATCH": "10"}
    # Hold memory_vectors in SHARE mode (inserts wait): a worker's vectors batch then stops at its INSERT, inside
    # its transaction and holding its partition's claim, for as long as the test needs. Without it the batches
    # (their embeddings cached by the write path) can all commit before the kill lands.
    gate = engine.connect()
    gate_tx = gate.begin()
    gate.execute(text("LOCK TABLE memory_vectors IN SHARE MODE"))
    victim = start_worker(extra_env={**env, "PGAPPNAME": "worker-a"})
    workers = [victim]
    vectors = [parts.Partition(i, 2) for i in range(2)]
    try:
        def a_mid_batch() -> bool:
            with engine.connect() as conn:
                return bool(conn.execute(_BLOCKED_MID_BATCH, {"app": "worker-a"}).scalar_one())

        # The second worker starts once the first is inside a batch: started together, its two threads could
        # claim both vectors partitions first, and the first would wait for a blocked batch's time limit.
        assert wait_until(a_mid_batch, timeout=300, interval=0.05)
        workers.append(start_worker(extra_env={**env, "PGAPPNAME": "worker-b"}))
        assert any("worker-a" in holders(engine, "vectors", p) for p in vectors)
        victim.kill()
        gate_tx.rollback()
        gate.close()
        at_kill = {t: counts(engine, t) for t in tenants}
        assert any(c["memory_vectors"] < per_tenant for c in at_kill.values()), at_kill
        # Its claims ended with its connections: the survivor projects every partition, the dead one's included.
        assert wait_until(lambda: all("worker-a" not in holders(engine, "vectors", p) for p in vectors), timeout=60)
        assert wait_until(lambda: all(counts(engine, t)["memory_vectors"] == per_tenant for t in tenants),
                          timeout=600, interval=0.2)

        workers.append(start_worker(extra_env={**env, "PGAPPNAME": "worker-a"}))  # joins in, applies nothing again
        for tenant in tenants:
            remember(engine, tenant, [MemoryInput(content=f"{tenant} after the restart", must_keep=True)],
                     {"source": "test"})
        with engine.connect() as conn:
            last = conn.execute(text("SELECT max(position) FROM events")).scalar_one()
        assert wait_projected(engine, last, timeout=300)
        for tenant in tenants:
            assert_applied_exactly_once(engine, tenant, per_tenant + 1)
        with engine.connect() as conn:
            assert {r.partition.count for r in parts.rows(conn, "vectors")} == {2}
        for name in ("memories", "keyword", "vectors"):
            report = verify(engine, get_projector(name))
            assert report.identical, [t for t in report.tables if not t.identical]
    finally:
        if not gate.closed:
            gate_tx.rollback()
            gate.close()
        for w in workers:
            w.stop()
        # The rest of the session runs on one partition, as a default deployment does (exact: aligned first).
        for projector in PROJECTORS.values():
            catch_up(engine, projector, 500, max_seconds=120)
            assert len(partitions_for(engine, projector, 1)) == 1
