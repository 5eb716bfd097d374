"""The status-over-time replay (console/status_series.py): each decision moves its memories as the memories
projector applies it; hidden memories are not counted; a long log is thinned to about max_points."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from console.status_series import CHARTED, status_series
from eventstore.status_history import StatusDecision

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def _d(minute: int, type_: str, memory: str, disposition: str | None = None, to: str | None = None,
       merged: list[str] | None = None) -> StatusDecision:
    return StatusDecision(T0 + timedelta(minutes=minute), type_, memory, disposition, to, merged or [])


def test_each_decision_moves_its_memories() -> None:
    series = status_series([
        _d(0, "MemoryAdmitted", "a", disposition="active"),
        _d(1, "MemoryAdmitted", "b", disposition="staging"),
        _d(2, "MemoryAdmitted", "c", disposition="active"),
        _d(3, "MemoryStatusChanged", "a", to="dormant"),
        _d(4, "MemoryStatusChanged", "b", to="active"),
        _d(5, "MemorySuperseded", "c"),
        _d(6, "MemoriesMerged", "b", merged=["a"]),
        _d(7, "MemoryAdmitted", "x", disposition="discard"),
    ])
    assert dict(series.totals) == {"active": 1, "superseded": 1, "merged": 1, "discarded": 1}
    assert [counts for _, counts in series.points][:4] == [(1, 0, 0, 0), (1, 1, 0, 0), (2, 1, 0, 0), (1, 1, 1, 0)]
    assert series.line("active")[-1] == (T0 + timedelta(minutes=7), 1.0)
    assert CHARTED == ("active", "staging", "dormant", "archived")


def test_hidden_memories_are_not_counted() -> None:
    series = status_series([_d(0, "MemoryAdmitted", "a", disposition="active"),
                            _d(1, "MemoryAdmitted", "h", disposition="active")], hidden={"h"})
    assert dict(series.totals) == {"active": 1} and series.decisions == 1


def test_a_long_log_is_thinned_and_ends_on_the_current_counts() -> None:
    decisions = [_d(i, "MemoryAdmitted", f"m{i}", disposition="active") for i in range(1000)]
    series = status_series(decisions, max_points=50)
    assert 50 <= len(series.points) <= 101
    assert series.points[-1][1] == (1000, 0, 0, 0)
    assert [t for t, _ in series.points] == sorted(t for t, _ in series.points)
