"""Which database errors say "the database is unavailable or busy, try later" rather than "this input or this event
is bad": the API answers the first with a 503, workers retry them, and a projector never parks an event for one."""

from __future__ import annotations

import psycopg
from sqlalchemy import exc as sa_exc

# SQLSTATE classes and codes of a database that is down, restarting, overloaded or contended: connection
# exception, transaction rollback (serialization, deadlock), insufficient resources, operator intervention
# (query cancelled by a timeout, shutdown), system error; lock_not_available (a lock timeout).
_TRANSIENT_CLASSES = ("08", "40", "53", "57", "58")
_TRANSIENT_CODES = ("55P03",)


def _sqlstate(error: BaseException) -> str | None:
    orig = error.orig if isinstance(error, sa_exc.DBAPIError) else error
    return getattr(orig, "sqlstate", None) if isinstance(orig, psycopg.Error) else None


# A statement cancelled by its statement_timeout (57014) or the server out of memory (53200): "try later" for a
# request, but an event that hits one on every attempt would be retried forever, so a projector counts it as a
# failed attempt of that event (projections/dead_letters.py): a transient one is retried, a deterministic one
# parked after MAX_EVENT_FAILURES.
_STATEMENT_LIMITS = ("57014", "53200")


def is_statement_limit(error: BaseException) -> bool:
    """True when `error` (or what caused it) is a statement that ran over its time or the server's memory."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if _sqlstate(current) in _STATEMENT_LIMITS:
            return True
        current = current.__cause__ or current.__context__
    return False


def is_unavailable(error: BaseException) -> bool:
    """True when `error` (or what caused it) is the database being unreachable, restarting, out of connections
    (the pool's timeout included) or timing out a statement or a lock."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, sa_exc.TimeoutError | sa_exc.InterfaceError | sa_exc.DisconnectionError):
            return True
        if isinstance(current, sa_exc.DBAPIError) and current.connection_invalidated:
            return True
        if isinstance(current, psycopg.InterfaceError | psycopg.errors.ConnectionTimeout):
            return True
        state = _sqlstate(current)
        if state and (state[:2] in _TRANSIENT_CLASSES or state in _TRANSIENT_CODES):
            return True
        orig = current.orig if isinstance(current, sa_exc.DBAPIError) else current
        if isinstance(orig, psycopg.OperationalError) and state is None:
            return True  # no SQLSTATE: raised by the driver itself (connection refused, closed, lost)
        current = current.__cause__ or current.__context__
    return False
