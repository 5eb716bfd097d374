"""Rebuilds started from the console: projections/rebuild.py's rebuild run in a thread of the API process, its
progress kept here for the projections page to show (a rebuild is exclusive per projection: ProjectionBusy)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime

import structlog
from sqlalchemy import Engine

from projections.base import Projector
from projections.rebuild import rebuild

log = structlog.get_logger(__name__)


@dataclass
class Progress:
    projection: str
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    done: int = 0
    total: int = 0
    finished_at: datetime | None = None
    position: int | None = None  # rebuilt to, once finished
    error: str | None = None

    @property
    def running(self) -> bool:
        return self.finished_at is None

    @property
    def percent(self) -> int:
        return 100 if not self.running and self.error is None else int(100 * self.done / max(self.total, 1))


_LOCK = threading.Lock()
RUNS: dict[str, Progress] = {}  # the latest rebuild of each projection started here


def start(engine: Engine, projector: Projector, batch_size: int) -> Progress:
    with _LOCK:
        current = RUNS.get(projector.name)
        if current is not None and current.running:
            return current
        run = RUNS[projector.name] = Progress(projector.name)

    def tick(done: int, total: int) -> None:
        run.done, run.total = done, total

    def work() -> None:
        try:
            run.position = rebuild(engine, projector, batch_size, progress=tick).position
        except Exception as exc:  # shown on the page; the rebuild itself dropped its scratch schema
            log.warning("console.rebuild_failed", projection=projector.name, error=str(exc)[:300])
            run.error = f"{type(exc).__name__}: {exc}"
        finally:
            run.finished_at = datetime.now(UTC)

    threading.Thread(target=work, name=f"console-rebuild-{projector.name}", daemon=True).start()
    return run
