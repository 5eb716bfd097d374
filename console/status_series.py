"""How many memories stood in each status over time (pure), replayed from the tenant's status decisions in log
order as the memories projector applies them: an admission gives its disposition's status, a status change its
to_status, a supersede makes the old memory superseded, a merge the merged ones merged."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from domain.events import MemoriesMerged, MemoryAdmitted, MemoryStatusChanged, MemorySuperseded
from domain.memory_status import DISPOSITION_STATUS
from eventstore.status_history import StatusDecision

CHARTED = ("active", "staging", "dormant", "archived")  # the lifecycle's own statuses, one line each
MAX_POINTS = 120  # points kept per line: thinned evenly over the decisions as the log grows


@dataclass
class StatusSeries:
    points: list[tuple[datetime, tuple[int, ...]]] = field(default_factory=list)  # counts in CHARTED order
    totals: Counter[str] = field(default_factory=Counter)  # every status now (superseded, merged, ... too)
    decisions: int = 0

    def line(self, status: str) -> list[tuple[datetime, float]]:
        i = CHARTED.index(status)
        return [(at, float(counts[i])) for at, counts in self.points]


def _moves(d: StatusDecision) -> list[tuple[str, str]]:
    """(memory, its new status) for each memory the decision moves."""
    if d.type == MemoryAdmitted.type_name() and d.disposition in DISPOSITION_STATUS:
        return [(d.memory_id, DISPOSITION_STATUS[d.disposition])]
    if d.type == MemoryStatusChanged.type_name() and d.to_status:
        return [(d.memory_id, d.to_status)]
    if d.type == MemorySuperseded.type_name():
        return [(d.memory_id, "superseded")]
    if d.type == MemoriesMerged.type_name():
        return [(m, "merged") for m in d.merged_ids]
    return []


def status_series(decisions: Iterable[StatusDecision], hidden: Collection[str] = (),
                  max_points: int = MAX_POINTS) -> StatusSeries:
    """The counts after each decision, thinned to about `max_points` (the last always kept); memories in
    `hidden` (the privacy policy's) are not counted."""
    out = StatusSeries()
    status: dict[str, str] = {}
    stride = 1
    last: tuple[datetime, tuple[int, ...]] | None = None
    for d in decisions:
        moved = False
        for memory, to in _moves(d):
            if memory in hidden or status.get(memory) == to:
                continue
            if memory in status:
                out.totals[status[memory]] -= 1
            status[memory], moved = to, True
            out.totals[to] += 1
        if not moved:
            continue
        out.decisions += 1
        last = (d.at, tuple(out.totals[s] for s in CHARTED))
        if out.decisions % stride == 0:
            out.points.append(last)
        if len(out.points) > 2 * max_points:  # keep every other point, and take half as many from now on
            out.points, stride = out.points[::2], stride * 2
    if last is not None and (not out.points or out.points[-1] != last):
        out.points.append(last)
    out.totals = +out.totals  # drop the statuses no memory holds now
    return out


__all__ = ["CHARTED", "StatusSeries", "status_series"]
