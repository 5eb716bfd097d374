"""Events appended per minute over the last minutes (the console's rate chart): one tenant's, or the whole log's
for an operator. Read over the newest WINDOW positions only (a range of the primary key, not a scan of the whole
log): a stretch busier than that shows cut."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, text

_PER_MINUTE = text("""
SELECT date_trunc('minute', recorded_at) AS minute, count(*) AS n FROM events
WHERE position > (SELECT coalesce(max(position), 0) FROM events) - :window
  AND recorded_at >= now() - make_interval(mins => :minutes)
  AND (CAST(:tenant AS text) IS NULL OR tenant = CAST(:tenant AS text))
GROUP BY 1 ORDER BY 1
""")
WINDOW = 200_000


def appended_per_minute(conn: Connection, tenant: str | None, minutes: int = 30) -> list[tuple[datetime, int]]:
    """(minute, events appended in it) for the last `minutes`, minutes without events left out."""
    rows = conn.execute(_PER_MINUTE, {"tenant": tenant, "minutes": minutes, "window": WINDOW})
    return [(r.minute, r.n) for r in rows]
