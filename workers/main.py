"""Worker entry point: `dramatiq workers.main`. Adds the poll fallback, the liveness heartbeat and the
lifecycle scheduler (workers/scheduler.py: one leader across all worker processes)."""

from __future__ import annotations

import contextlib
import os
import signal
import threading

import dramatiq
import structlog
from dramatiq.middleware import Middleware

from infra import lifeline
from infra.broker import redis_client
from infra.embedding import get_embedder
from infra.logging import configure_logging
from infra.settings import get_settings
from workers import actors  # noqa: F401 - registers the actors
from workers.actors import catch_up_all
from workers.heartbeat import heartbeat_key
from workers.scheduler import LeaderScheduler

log = structlog.get_logger(__name__)
if os.environ.get(lifeline.ENV):  # under `engramlog up`: this worker process dies with the Dramatiq master, as the
    lifeline.die_with_parent(signal.SIGKILL, os.getppid())  # master dies with up (infra/lifeline.py)


class PollAndHeartbeat(Middleware):
    """Per worker process: catch projections up every poll interval (even with Redis down), and
    keep a heartbeat key in Redis that /healthz reads."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.scheduler: LeaderScheduler | None = None

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        settings = get_settings()
        configure_logging(settings.stack.log_level)
        # Load the embedding model before projecting, so the first batch is not held up by it.
        get_embedder(settings.embedding.embedding_model).warm()
        self.threads = [threading.Thread(target=self._poll, args=(settings.projections.poll_interval_s,), daemon=True),
                        threading.Thread(target=self._beat, args=(settings.workers.worker_heartbeat_s,), daemon=True)]
        for t in self.threads:
            t.start()
        if settings.scheduler.scheduler_enabled:  # the lifecycle scheduler: active in one worker process only (leader)
            self.scheduler = LeaderScheduler(settings).start()
        log.info("worker.started", pid=os.getpid())

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        self.stop.set()
        if self.scheduler is not None:
            self.scheduler.stop()

    def _poll(self, interval: float) -> None:
        while not self.stop.wait(interval):
            try:
                applied = catch_up_all()
                if applied:
                    log.info("projections.polled", applied=applied)
            except Exception as exc:
                log.warning("projections.poll_failed", error=str(exc))

    def _beat(self, interval: float) -> None:  # in Redis, whichever broker carries the queues
        key = heartbeat_key()
        while True:
            try:
                redis_client.set(key, "1", ex=int(interval * 3) + 1)
            except Exception as exc:
                log.warning("worker.heartbeat_failed", error=str(exc))
            if self.stop.wait(interval):
                break
        with contextlib.suppress(Exception):
            redis_client.delete(key)


dramatiq.get_broker().add_middleware(PollAndHeartbeat())
