"""The activation curve of one memory over time (pure): ACT-R's normalised activation (domain/activation.py) at
each point of a grid, from the accesses the log holds (recalls that returned it, reinforcements) as they stood."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from datetime import datetime

from domain.activation import age_hours, normalised_activation


def activation_curve(recorded_at: datetime, accesses: Sequence[datetime], now: datetime, d: float,
                     points: int = 48) -> list[tuple[datetime, float]]:
    times = sorted(a for a in accesses if a >= recorded_at)
    span = max((now - recorded_at).total_seconds(), 1.0)
    grid = [recorded_at + (now - recorded_at) * (i / (points - 1)) for i in range(points)] if span > 1 else [now]
    grid = sorted(set(grid) | {t for t in times if t <= now})
    out = []
    for t in grid:
        n = bisect_right(times, t)
        last = times[n - 1] if n else None
        out.append((t, normalised_activation(n, age_hours(t, last, recorded_at), d)))
    return out
