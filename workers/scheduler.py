"""The lifecycle scheduler: APScheduler sends Dramatiq messages to the lifecycle actors, from one leader only.

Every worker process (workers/main.py) starts a LeaderScheduler. Each tries to take a PostgreSQL session
advisory lock on its own connection; the one that gets it is the leader and runs an APScheduler
BackgroundScheduler that sends `lifecycle_decay` every ENGRAMLOG_DECAY_INTERVAL_S and `lifecycle_consolidate`
every ENGRAMLOG_CONSOLIDATION_INTERVAL_S. The others are followers and try again every
ENGRAMLOG_SCHEDULER_RETRY_S; when the leader's process dies its connection closes, PostgreSQL releases the
lock, and a follower takes over. The leader checks its connection at the same interval and steps down when
it is lost. The lock shows in pg_locks as an advisory lock with classid LEADER_LOCK[0] and objid
LEADER_LOCK[1], held by a backend whose application_name is "engramlog-scheduler:<host>:<pid>".

The actors run on the "lifecycle" queue and read the clock once, at their start; the jobs take it from there.
Each actor leaves its last report in Redis (`engramlog:lifecycle:last:<job>`) for operators.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
from datetime import UTC, datetime
from typing import Any

import dramatiq
import psycopg
import structlog

from infra.broker import broker, redis_client  # noqa: F401 - broker: binds the actors below to the configured one
from infra.settings import Settings, get_settings

log = structlog.get_logger(__name__)
LEADER_LOCK = (0x454E4752, 0x53434844)  # "ENGR", "SCHD": pg_locks classid / objid (objsubid 2)
LAST_RUN_PREFIX = "engramlog:lifecycle:last:"
QUEUE = "lifecycle"


def _remember_run(job: str, report: dict[str, Any]) -> None:
    try:
        redis_client.set(f"{LAST_RUN_PREFIX}{job}", json.dumps(report, default=str))
    except Exception as exc:
        log.warning("lifecycle.report_not_kept", job=job, error=str(exc))


@dramatiq.actor(queue_name=QUEUE, max_retries=0, time_limit=60 * 60 * 1000)
def lifecycle_decay(tenant: str | None = None) -> dict[str, Any]:
    """The decay sweep, with the clock read now."""
    from infra.db import get_engine
    from workers.lifecycle import JobBusy, decay_sweep

    clock = datetime.now(UTC)
    try:
        report = decay_sweep(get_engine(), clock, tenant, wait=False).as_dict()
    except JobBusy as exc:
        log.info("lifecycle.skipped", job="decay", reason=str(exc))
        return {"skipped": str(exc)}
    _remember_run("decay", {**report, "finished_at": datetime.now(UTC).isoformat()})
    return report


@dramatiq.actor(queue_name=QUEUE, max_retries=0, time_limit=4 * 60 * 60 * 1000)
def lifecycle_consolidate(tenant: str | None = None, agent_id: str | None = None) -> dict[str, Any]:
    """The consolidation cycle, with the clock read now."""
    from infra.db import get_engine
    from workers.consolidation import consolidate
    from workers.lifecycle import JobBusy

    clock = datetime.now(UTC)
    try:
        result = consolidate(get_engine(), clock, tenant, agent_id, wait=False)
    except JobBusy as exc:
        log.info("lifecycle.skipped", job="consolidation", reason=str(exc))
        return {"skipped": str(exc)}
    report = {"clock": clock.isoformat(), "tenants": len(result.runs), "changes": result.totals(),
              "runs": [{"tenant": r.tenant, "run_id": str(r.run_id),
                        "blind_spots": r.report["blind_spots"]["live"]} for r in result.runs[:100]],
              "finished_at": datetime.now(UTC).isoformat()}
    _remember_run("consolidation", report)
    return report


def libpq_url(url: str) -> str:
    """The database URL as libpq takes it (no SQLAlchemy driver suffix)."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme.split('+', 1)[0]}{sep}{rest}"


def _send(actor: dramatiq.Actor) -> None:
    try:
        actor.send()
        log.info("scheduler.sent", job=actor.actor_name)
    except Exception as exc:  # Redis down: the next tick sends again
        log.warning("scheduler.send_failed", job=actor.actor_name, error=str(exc))


class LeaderScheduler:
    """Leader election on a PostgreSQL advisory lock; the leader runs the APScheduler jobs."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or get_settings()
        self.name = f"engramlog-scheduler:{socket.gethostname()}:{os.getpid()}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._conn: psycopg.Connection[Any] | None = None
        self._scheduler: Any = None

    @property
    def is_leader(self) -> bool:
        return self._scheduler is not None

    def start(self) -> LeaderScheduler:
        self._thread = threading.Thread(target=self._run, name="lifecycle-scheduler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._step_down()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if self.is_leader:
                    self._check_still_leader()
                else:
                    self._try_lead()
            except Exception as exc:
                log.warning("scheduler.election_failed", error=str(exc))
                self._step_down()
            self._stop.wait(self.settings.scheduler.scheduler_retry_s)

    def _try_lead(self) -> None:
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(libpq_url(self.settings.stack.database_url), autocommit=True,
                                         application_name=self.name, connect_timeout=5)
        row = self._conn.execute("SELECT pg_try_advisory_lock(%s, %s)", LEADER_LOCK).fetchone()
        if not (row and row[0]):
            return
        from apscheduler.schedulers.background import BackgroundScheduler

        scheduler = BackgroundScheduler(timezone=UTC, job_defaults={"coalesce": True, "max_instances": 1})
        scheduler.add_job(_send, "interval", args=[lifecycle_decay], id="decay",
                          seconds=self.settings.scheduler.decay_interval_s)
        scheduler.add_job(_send, "interval", args=[lifecycle_consolidate], id="consolidation",
                          seconds=self.settings.scheduler.consolidation_interval_s)
        scheduler.start()
        self._scheduler = scheduler
        log.info("scheduler.leader", name=self.name, decay_interval_s=self.settings.scheduler.decay_interval_s,
                 consolidation_interval_s=self.settings.scheduler.consolidation_interval_s)

    def _check_still_leader(self) -> None:
        assert self._conn is not None
        self._conn.execute("SELECT 1")  # raises when the connection, and with it the lock, is gone

    def _step_down(self) -> None:
        if self._scheduler is not None:
            try:
                self._scheduler.shutdown(wait=False)
            except Exception as exc:
                log.warning("scheduler.shutdown_failed", error=str(exc))
            self._scheduler = None
            log.info("scheduler.stepped_down", name=self.name)
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()  # closing the session releases its advisory lock
            self._conn = None
