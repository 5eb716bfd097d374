"""What the hit-log says about a tenant's recalls (the console's lifecycle page): the most asked queries, the
queries that abstained or returned nothing, per domain how often a result was drilled into, and the keyword-gap
figures (recall/analysis.py, counted in the same pass).

Read from the log in one pass (the recall streams, eventstore/query.py recall_stream_events: RecallServed and the
drills and feedback on each recall's stream), never from another read model. Under the privacy policy in force now,
for every key, as GET /v1/recalls/{id} is: a recall the event export would hide (scoped to an excluded item, or
having answered one: recall/event_privacy.py recall_served) is left out of every figure but the keyword gaps (counts
only) and its query text is never shown; only their count is.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from domain.events import RecallServed, ResultDrilled
from domain.privacy import PrivacyPolicy
from eventstore.query import recall_stream_events
from recall.analysis import RECALL_STREAM_TYPES, DomainGaps, add_recall, by_stream, result_key
from recall.event_privacy import Gate, recall_served

TOP = 20  # queries listed in each table


@dataclass
class _Recall:
    recall_id: str
    query: str
    scope: dict[str, Any]
    results: list[dict[str, Any]]
    abstained: bool
    drilled: set[tuple[Any, ...]]


@dataclass
class QueryRow:
    query: str
    recalls: int
    last_recall_id: str  # one recall that asked it (the last read), to open its explanation
    why: str = ""  # for an unanswered query: abstained | nothing returned


@dataclass
class DomainDrills:
    domain: str
    recalls: int = 0  # recalls that returned at least one result of the domain
    results: int = 0
    drilled: int = 0  # results an agent drilled into afterwards
    recalls_drilled: int = 0

    @property
    def rate(self) -> float | None:
        return self.drilled / self.results if self.results else None


@dataclass
class HitlogReport:
    recalls: int = 0
    hidden: int = 0  # recalls the privacy policy hides now: counted, never shown
    unanswered: int = 0
    top_queries: list[QueryRow] = field(default_factory=list)
    unanswered_queries: list[QueryRow] = field(default_factory=list)
    drills: list[DomainDrills] = field(default_factory=list)
    gaps: list[DomainGaps] = field(default_factory=list)  # over every recall in the window: figures only


def _abstained(explanation: dict[str, Any]) -> bool:
    """The funnel's verdict (a single-domain recall), or any bucket's reason (a fan-out)."""
    if explanation.get("abstained"):
        return True
    return any(str(b.get("reason") or "").startswith("abstained") for b in explanation.get("buckets") or ())


def _recalls(conn: Connection, tenant: str, since: datetime | None, gaps: dict[str, DomainGaps]) -> list[_Recall]:
    """The recalls served since `since`, each with the results drilled into; their keyword gaps into `gaps`."""
    out: list[_Recall] = []
    rows = recall_stream_events(conn, tenant, list(RECALL_STREAM_TYPES), RecallServed.type_name(), since)
    for events in by_stream(rows):
        add_recall(gaps, events)
        served = next((e.data for e in events if e.type == RecallServed.type_name()), None)
        if served is None:  # drills or feedback on a recall served before the window
            continue
        drilled = {result_key(e.data.get("domain", ""), None, e.data.get("handle"))
                   for e in events if e.type == ResultDrilled.type_name()}
        out.append(_Recall(str(served.get("recall_id")), str(served.get("query") or ""), served.get("scope") or {},
                           [r for r in served.get("results") or [] if isinstance(r, dict)],
                           _abstained(served.get("explanation") or {}), drilled))
    return out


def _key(query: str) -> str:
    return " ".join(query.casefold().split())


def _ranked(counts: Counter[str], first: dict[str, str], last: dict[str, str],
            why: dict[str, str] | None = None) -> list[QueryRow]:
    return [QueryRow(first[k], n, last[k], (why or {}).get(k, "")) for k, n in counts.most_common(TOP)]


def hitlog_report(conn: Connection, tenant: str, policy: PrivacyPolicy, since: datetime | None = None) -> HitlogReport:
    gaps: dict[str, DomainGaps] = {}
    recalls = _recalls(conn, tenant, since, gaps)
    report = HitlogReport(gaps=[gaps[d] for d in sorted(gaps)])
    if not policy.empty:
        gate = Gate(conn, tenant, policy, set())
        gate.decide_memories(r["memory_id"] for rc in recalls for r in rc.results if r.get("memory_id"))
        shown = [rc for rc in recalls if not recall_served(gate, {"scope": rc.scope, "results": rc.results})]
        report.hidden = len(recalls) - len(shown)
        recalls = shown
    asked: Counter[str] = Counter()
    unanswered: Counter[str] = Counter()
    first: dict[str, str] = {}
    last: dict[str, str] = {}
    last_unanswered: dict[str, str] = {}
    why: dict[str, str] = {}
    drills: dict[str, DomainDrills] = {}
    for rc in recalls:
        k = _key(rc.query)
        asked[k] += 1
        first.setdefault(k, rc.query)
        last[k] = rc.recall_id
        if rc.abstained or not rc.results:
            unanswered[k] += 1
            last_unanswered[k] = rc.recall_id
            why[k] = "abstained" if rc.abstained else "nothing returned"
        by_domain: dict[str, list[tuple[Any, ...]]] = {}
        for r in rc.results:
            domain = r.get("domain") or "memories"
            by_domain.setdefault(domain, []).append(result_key(domain, r.get("memory_id"), r.get("handle")))
        for domain, keys in by_domain.items():
            s = drills.setdefault(domain, DomainDrills(domain))
            hit = sum(key in rc.drilled for key in keys)
            s.recalls += 1
            s.results += len(keys)
            s.drilled += hit
            s.recalls_drilled += hit > 0
    report.recalls, report.unanswered = len(recalls), sum(unanswered.values())
    report.top_queries = _ranked(asked, first, last)
    report.unanswered_queries = _ranked(unanswered, first, last_unanswered, why)
    report.drills = [drills[d] for d in sorted(drills)]
    return report


__all__ = ["TOP", "DomainDrills", "HitlogReport", "QueryRow", "hitlog_report"]
