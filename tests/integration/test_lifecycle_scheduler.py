"""The lifecycle scheduler with two real Dramatiq worker processes: exactly one holds the leader lock (seen in
pg_locks), it sends the decay job on its interval and a worker runs it, and when the leader's process is killed
the other takes over."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import psutil
from conftest import ROOT, WorkerProcess, wait_until
from sqlalchemy import text

from workers.scheduler import LAST_RUN_PREFIX, LEADER_LOCK

ENV = {"ENGRAMLOG_SCHEDULER_RETRY_S": "0.5", "ENGRAMLOG_DECAY_INTERVAL_S": "1",
       "ENGRAMLOG_CONSOLIDATION_INTERVAL_S": "3600"}


class LifecycleWorker(WorkerProcess):
    """A worker that also consumes the lifecycle queue, as `engramlog up` starts it."""

    def start(self) -> LifecycleWorker:
        cmd = [sys.executable, "-m", "dramatiq", "workers.main", "--processes", str(self.processes),
               "--threads", str(self.threads), "--queues", "projections", "ingest", "lifecycle"]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=self.env, start_new_session=True)
        return self

    def pids(self) -> set[int]:
        assert self.proc is not None
        try:
            parent = psutil.Process(self.proc.pid)
            return {parent.pid, *(c.pid for c in parent.children(recursive=True))}
        except psutil.NoSuchProcess:
            return set()


_HOLDERS = text("""
SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.classid = :c AND l.objid = :o AND l.objsubid = 2
""")


def holders(engine) -> list[str]:
    with engine.connect() as conn:
        return list(conn.execute(_HOLDERS, {"c": LEADER_LOCK[0], "o": LEADER_LOCK[1]}).scalars())


def leader_pid(engine) -> int | None:
    names = holders(engine)
    return int(names[0].rsplit(":", 1)[1]) if len(names) == 1 else None


def test_one_scheduler_leader_across_workers_and_failover(engine) -> None:
    from infra.broker import broker

    broker.client.delete(f"{LAST_RUN_PREFIX}decay")
    workers = [LifecycleWorker({**os.environ, **ENV}).start() for _ in range(2)]
    try:
        assert wait_until(lambda: leader_pid(engine) is not None, timeout=120), holders(engine)
        # Both workers up (each a scheduler candidate), still exactly one leader.
        assert wait_until(lambda: all(len(w.pids()) >= 2 for w in workers), timeout=60)
        for _ in range(10):
            assert len(holders(engine)) == 1
            time.sleep(0.2)
        first = leader_pid(engine)
        [leading] = [w for w in workers if first in w.pids()]

        # The leader's APScheduler sends the decay job every second; a worker runs it and leaves its report.
        assert wait_until(lambda: broker.client.get(f"{LAST_RUN_PREFIX}decay") is not None, timeout=60)
        report = json.loads(broker.client.get(f"{LAST_RUN_PREFIX}decay"))
        assert {"sweep_id", "clock", "transitions"} <= set(report)

        # Kill the leader's worker outright: its session ends, the lock is released, the follower takes over.
        leading.kill()
        [other] = [w for w in workers if w is not leading]
        assert wait_until(lambda: (pid := leader_pid(engine)) is not None and pid in other.pids(), timeout=60), \
            holders(engine)
        assert len(holders(engine)) == 1
    finally:
        for w in workers:
            w.stop()
    assert wait_until(lambda: holders(engine) == [], timeout=30)
