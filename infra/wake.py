"""The one post-append path: after an append commits, count its events and wake the projectors.

The wake-up is a Dramatiq message to the projection actor (workers/actors.py `run_projections`), sent by its queue
and actor name, so the write side (services/, recall/, workers' jobs) never imports the actors. A lost wake-up
only delays: the workers also poll (workers/main.py).
"""

from __future__ import annotations

import threading

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


_wanted = threading.Condition()  # guards the counts below
_asked = 0  # background wake-ups asked for
_answered = 0  # of those, the ones a send has covered
_sender: threading.Thread | None = None


def _behind() -> bool:
    return _asked > _answered


def _send_wanted() -> None:
    global _answered
    while True:
        with _wanted:
            _wanted.wait_for(_behind)
            covered = _asked  # asks that come while this one is sent get one more send, not one each
        wake_projections()
        with _wanted:
            _answered = covered
            _wanted.notify_all()


def _wake_soon() -> None:
    global _sender, _asked
    with _wanted:
        if _sender is None or not _sender.is_alive():
            _sender = threading.Thread(target=_send_wanted, name="wake-projections", daemon=True)
            _sender.start()
        _asked += 1
        _wanted.notify_all()


def settled(timeout_s: float = 10.0) -> bool:
    """Wait until every background wake-up asked for so far is sent (tests; a shutdown that wants them out)."""
    with _wanted:
        return _wanted.wait_for(lambda: not _behind(), timeout_s)


def appended(count: int, background: bool = False) -> None:
    """Call once after each committed append of `count` events (0: nothing new, e.g. a retried batch).
    `background`: the wake-up is sent by a thread of its own, a burst of appends coalesced into one send, so the
    caller does not wait on Redis (recall's hit-log: the answer waits for the commit, not for the wake-up, which
    only hurries the projectors; the poll catches up without it)."""
    if count:
        EVENTS_APPENDED.inc(count)
    if background:
        _wake_soon()
    else:
        wake_projections()
