"""GET /console/lifecycle: memory status counts over time (a chart), and the hit-log over the last `days`: top
queries, queries that abstained or returned nothing, drill rates per domain, the keyword-gap report, and the live
blind spots. Everything under the tenant's privacy policy in force now, for every key (see each reader)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from sqlalchemy import Connection

from console.charts import lines_chart
from console.pages.common import Db, Who
from console.render import page, svg
from console.status_series import CHARTED, StatusSeries, status_series
from deep_recall.blind_spots import live_summary
from domain.privacy import PrivacyPolicy, scope_excluded
from eventstore.status_history import status_decisions
from recall.analysis import HYBRID_FALSE_POSITIVE_GATE, KEYWORD_FALSE_NEGATIVE_GATE
from recall.event_privacy import Gate
from recall.hitlog_report import hitlog_report
from recall.privacy import hidden_memories, policy_of

router = APIRouter(prefix="/console", include_in_schema=False)
BLIND_SPOTS = 20


def memory_statuses(conn: Connection, tenant: str, policy: PrivacyPolicy) -> StatusSeries:
    """The status counts, without the memories the policy hides (decided on their recordings: one more pass)."""
    hidden: set[str] = set()
    if not policy.empty:
        hidden = hidden_memories(conn, tenant, policy, {d.memory_id for d in status_decisions(conn, tenant)})
    return status_series(status_decisions(conn, tenant), hidden)


def _blind_spots(conn: Connection, tenant: str, policy: PrivacyPolicy, now: datetime) -> dict[str, Any]:
    """The tenant's live blind spots, none of an excluded scope or of a deep recall the policy hides now (as GET
    /v1/blind_spots decides them)."""
    found = live_summary(conn, tenant, None, now, BLIND_SPOTS)
    if policy.empty:
        return found
    gate = Gate(conn, tenant, policy, set())
    top = [s for s in found["top"] if not scope_excluded(policy, s) and not gate.recall_hidden(s["recall_id"],
                                                                                                 deep=True)]
    return {"live": None, "top": top}  # how many of the rest the policy hides is not read: the count goes


@router.get("/lifecycle", response_class=HTMLResponse)
def lifecycle(request: Request, who: Who, db: Db, days: int = Query(default=30, ge=1, le=3650)) -> HTMLResponse:
    now = datetime.now(UTC)
    since = now - timedelta(days=days)
    with db.connect() as conn:
        policy = policy_of(conn, who.tenant)
        series = memory_statuses(conn, who.tenant, policy)
        report = hitlog_report(conn, who.tenant, policy, since)
        spots = _blind_spots(conn, who.tenant, policy, now)
    chart = lines_chart({s: series.line(s) for s in CHARTED}, "memories by status over time")
    return page(request, "lifecycle.html", who, "Lifecycle and hit-log · Engramlog console", days=days,
                chart=svg(chart), series=series, charted=CHARTED, report=report,
                gaps=[g.as_dict() for g in report.gaps], spots=spots,
                gates={"keyword": KEYWORD_FALSE_NEGATIVE_GATE, "hybrid": HYBRID_FALSE_POSITIVE_GATE})
