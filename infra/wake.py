"""The one post-append path: after an append commits, count its events and wake the projectors.

The wake-up is a Dramatiq message to the projection actor (workers/actors.py `run_projections`), sent by its queue
and actor name, so the write side (services/, recall/, workers' jobs) never imports the actors. A lost wake-up
only delays: the workers also poll (workers/main.py).

At most one wake-up waits in the queue (issue 16 §3: one per append piled up faster than the worker took them, each
running a whole catch-up). A flag in Redis says "a wake-up is queued and no worker has started it": a sender that
finds it set sends nothing, and the actor clears it as it starts (`wake_taken`). Why nothing committed is left
without a catch-up after it: an append commits, then its sender sets the flag (SET NX). If the flag was already
set, the wake-up behind it has not started, since its actor clears the flag first thing: that actor's clearing
comes after this SET, and its reading of the log after its clearing, so it reads this append. If the SET wins, this
append's own wake-up is queued. Several workers change nothing: whichever clears the flag reads the log after, and
an append after the clearing sets it again. A send that fails after its SET deletes the flag; should a flag still
be left with no message behind it, it expires after WAKE_PENDING_TTL_S, holding wake-ups back that long at most
(the poll runs meanwhile).
"""

from __future__ import annotations

import contextlib
import threading
import time

import structlog
from dramatiq import Message

from infra.broker import broker, redis_client
from infra.metrics import EVENTS_APPENDED
from infra.settings import get_settings

log = structlog.get_logger(__name__)

# The projection actor's address (workers/actors.py declares the actor with these).
PROJECTIONS_QUEUE = "projections"
RUN_PROJECTIONS_ACTOR = "run_projections"

# The pending flag lives in Redis (infra/broker.py's `redis_client`) whichever broker carries the queue; named by the
# broker, so that processes on another broker sharing this Redis never hold back this broker's wake-ups.
WAKE_PENDING_KEY = f"engramlog:projections:wake-pending:{get_settings().workers.broker}"
WAKE_PENDING_TTL_S = 10
# On the Redis broker the flag and the queue are one server: a flag that cannot be set means a send that cannot be
# made, so it is not tried (a second timeout on the caller's path). On RabbitMQ the wake-up is sent regardless.
_FLAG_ON_QUEUE_SERVER = getattr(broker, "client", None) is redis_client


def _message() -> Message[None]:
    return Message(queue_name=PROJECTIONS_QUEUE, actor_name=RUN_PROJECTIONS_ACTOR, args=(), kwargs={}, options={})


def wake_projections() -> None:
    """Ask the workers to catch the projections up, unless a wake-up is already pending, not yet started. Never
    raises: the append is already committed."""
    try:
        if not redis_client.set(WAKE_PENDING_KEY, "1", nx=True, ex=WAKE_PENDING_TTL_S):
            return  # the pending wake-up's catch-up starts after this append committed: it applies it
    except Exception as exc:  # Redis down: the poll will pick it up
        if _FLAG_ON_QUEUE_SERVER:
            log.warning("projections.wake_failed", error=str(exc))
            return
        log.warning("projections.wake_flag_failed", error=str(exc))
    try:
        broker.enqueue(_message())
    except Exception as exc:  # the broker down: the poll will pick it up
        log.warning("projections.wake_failed", error=str(exc))
        with contextlib.suppress(Exception):
            redis_client.delete(WAKE_PENDING_KEY)  # no message behind the flag: the next append tries again


def wake_taken() -> None:
    """The projection actor, as it starts and before it reads the log: no wake-up is pending any more, so the next
    append sends one (see the module's docstring). Never raises: a flag left set expires."""
    try:
        redis_client.delete(WAKE_PENDING_KEY)
    except Exception as exc:
        log.warning("projections.wake_clear_failed", error=str(exc))


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
        # A round of the worker costs a fixed part whatever it applies (its standings, the horizon, claims and
        # checkpoints: ~20 statements, ~15 ms of CPU for one recall's RecallServed), spent on the cores the next
        # recall runs on. Sent a little later, one wake-up covers every recall of that span.
        time.sleep(get_settings().projections.hitlog_wake_delay_ms / 1000)
        with _wanted:
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
    `background`: the wake-up is sent by a thread of its own, hitlog_wake_delay_ms later, the appends of that span
    coalesced into one send, so the caller does not wait on Redis (recall's hit-log: the answer waits for the
    commit, not for the wake-up, which only hurries the projectors; the poll catches up without it)."""
    if count:
        EVENTS_APPENDED.inc(count)
    if background:
        _wake_soon()
    else:
        wake_projections()
