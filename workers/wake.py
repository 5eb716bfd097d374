"""After an append commits, wake the projectors. A lost wake-up only delays: the workers also poll."""

from __future__ import annotations

import structlog

log = structlog.get_logger(__name__)


def wake_projections() -> None:
    from workers.actors import run_projections

    try:
        run_projections.send()
    except Exception as exc:  # Redis down: the append is committed; the poll will pick it up
        log.warning("projections.wake_failed", error=str(exc))
