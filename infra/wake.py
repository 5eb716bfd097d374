"""The one post-append path: after an append commits, count its events and wake the projectors.

The wake-up is a Dramatiq message to the projection actor (workers/actors.py `run_projections`), sent by its queue
and actor name, so the write side (services/, recall/, workers' jobs) never imports the actors. A lost wake-up
only delays: the workers also poll (workers/main.py).
"""

from __future__ import annotations

import structlog
from dramatiq import Message

from infra.broker import broker
from infra.metrics import EVENTS_APPENDED

log = structlog.get_logger(__name__)

# The projection actor's address (workers/actors.py declares the actor with these).
PROJECTIONS_QUEUE = "projections"
RUN_PROJECTIONS_ACTOR = "run_projections"


def wake_projections() -> None:
    """Ask the workers to catch the projections up. Never raises: the append is already committed."""
    try:
        broker.enqueue(Message(queue_name=PROJECTIONS_QUEUE, actor_name=RUN_PROJECTIONS_ACTOR, args=(), kwargs={},
                               options={}))
    except Exception as exc:  # Redis down: the poll will pick it up
        log.warning("projections.wake_failed", error=str(exc))


def appended(count: int) -> None:
    """Call once after each committed append of `count` events (0: nothing new, e.g. a retried batch)."""
    if count:
        EVENTS_APPENDED.inc(count)
    wake_projections()
