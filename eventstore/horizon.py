"""The log's horizon: the oldest transaction still running that may append events. Every event below it in
(tx_id, position) order has committed (or never will), so a reader that stops there misses nothing behind it.

`pg_snapshot_xmin` alone would wait for every running transaction, so one projector batch that runs long (a
hostile file being parsed, a slow statement) would hold every projection of every tenant until it ended. A
transaction that never appends (a projector's batch) says so first, before its first write gives it a
transaction id: it holds NOT_APPENDING (a shared advisory lock) to its end, and the horizon passes over the ids of
those holding it. One look at pg_locks (materialized once, so the holder and its transaction id are read
together, per virtual transaction) serves both. Missing a holder only makes the horizon earlier (safe); a holder
is never an appender, since it declared so before it had an id.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

_CLASS, _OBJECT = 74520, 1  # pg_advisory_xact_lock_shared(int4, int4): classid, objid (objsubid 2)

HORIZON = f"""(
  WITH locks AS MATERIALIZED (SELECT locktype, virtualtransaction, transactionid, classid, objid, objsubid, granted
                              FROM pg_locks),
       quiet AS (SELECT x.transactionid::text::bigint AS xid32 FROM locks a
                 JOIN locks x ON x.virtualtransaction = a.virtualtransaction AND x.locktype = 'transactionid'
                 WHERE a.locktype = 'advisory' AND a.classid = {_CLASS} AND a.objid = {_OBJECT}
                   AND a.objsubid = 2 AND a.granted)
  SELECT COALESCE(min(r), pg_snapshot_xmax(pg_current_snapshot()))
  FROM pg_snapshot_xip(pg_current_snapshot()) AS r
  WHERE mod(r::text::bigint, 4294967296) NOT IN (SELECT xid32 FROM quiet))"""

# The declaration as an SQL expression, for a statement that also does other things first in its transaction.
NOT_APPENDING = f"pg_advisory_xact_lock_shared({_CLASS}, {_OBJECT})"
_NOT_APPENDING = text(f"SELECT {NOT_APPENDING}")


# The horizon now, and the log's last position under it: a reader that finds nothing of its own below the horizon
# has read everything there is of it up to that position: every transaction below the horizon has ended, so
# whatever it appended is visible to this statement and numbered at or below that position.
_HORIZON_AND_HEAD = text(f"SELECT CAST(CAST({HORIZON} AS text) AS bigint), "
                         "(SELECT coalesce(max(position), 0) FROM events)")


def horizon_and_head(conn: Connection) -> tuple[int, int]:
    """(the log's horizon as a transaction id, the log's last position visible now)."""
    tx, pos = conn.execute(_HORIZON_AND_HEAD).one()
    return int(tx), int(pos)


def declare_not_appending(conn: Connection) -> None:
    """This transaction will append no event: readers of the log need not wait for it. Call it first, before the
    transaction writes anything."""
    conn.execute(_NOT_APPENDING)


__all__ = ["HORIZON", "NOT_APPENDING", "declare_not_appending", "horizon_and_head"]
