"""The soak's figures from what bench/soak.py recorded: per-minute windows, RSS slopes, and the PNG charts.

Pure functions over plain records (no stack, no HTTP), so they are unit-tested (tests/unit/test_soak_report.py);
the charts need matplotlib (a dev dependency) and are skipped with a note when it is missing.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import percentile


@dataclass(frozen=True)
class Call:
    """One request of the load: its kind ("write" | "recall"), when it was sent (seconds from the load's start),
    its latency and its HTTP status (0: no answer, the connection failed or timed out)."""

    kind: str
    at_s: float
    ms: float
    status: int


@dataclass(frozen=True)
class Sample:
    """One look at the stack (every few seconds): projection lag, RSS per process label (MiB), database size, and
    the projections' wake-up messages queued in Redis, not yet taken by a worker (LLEN; -1: not read)."""

    at_s: float
    lag_events: int  # the most events any projection still had to apply
    lag_s: float  # its age, as GET /v1/projections reports it
    rss_mib: dict[str, float]
    db_mib: float
    wake_queue: int = -1  # default: results written before it was recorded still load


def slope_per_min(points: Sequence[tuple[float, float]]) -> float:
    """The least-squares slope of (seconds, value) points, per minute; 0 with fewer than two distinct times."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    var = sum((x - mx) ** 2 for x, _ in points)
    if var == 0:
        return 0.0
    return sum((x - mx) * (y - my) for x, y in points) / var * 60


def answered(calls: Sequence[Call], kind: str, start: float = 0.0, end: float = math.inf) -> tuple[list[float], int]:
    """The latencies (ms) of the `kind` calls sent in [start, end) that were answered 2xx, and how many were not
    (the errors: another status, or no answer)."""
    mine = [c for c in calls if c.kind == kind and start <= c.at_s < end]
    ok = [c.ms for c in mine if 200 <= c.status < 300]
    return ok, len(mine) - len(ok)


def minutes(calls: Sequence[Call], samples: Sequence[Sample], seconds: float) -> list[dict[str, Any]]:
    """Per minute of the load (the last one partial when `seconds` is not whole minutes): for writes and recalls
    the achieved rate (answered 2xx per second), p50/p95 of the 2xx latencies, the errors; the worst projection
    lag, the last RSS / database size seen in that minute, and the most and the last wake-ups queued."""
    n = max(1, math.ceil(seconds / 60 - 0.02))  # a run overshooting its minutes by a second has no extra window
    out: list[dict[str, Any]] = []
    for m in range(n):
        start = m * 60.0
        span = max(min((m + 1) * 60.0, seconds) - start, 1e-9)
        end = math.inf if m == n - 1 else start + 60.0  # the last window keeps the calls that ended the run
        row: dict[str, Any] = {"minute": m + 1, "seconds": round(span, 1)}
        for kind in ("write", "recall"):
            ok, errors = answered(calls, kind, start, end)
            row[kind] = {"rate_per_s": round(len(ok) / span, 2), "p50_ms": round(percentile(ok, 50), 1),
                         "p95_ms": round(percentile(ok, 95), 1), "ok": len(ok), "errors": errors}
        seen = [s for s in samples if start <= s.at_s < end]
        row["lag_events_max"] = max((s.lag_events for s in seen), default=None)
        row["lag_s_max"] = max((s.lag_s for s in seen), default=None)
        row["rss_mib"] = seen[-1].rss_mib if seen else {}
        row["db_mib"] = seen[-1].db_mib if seen else None
        row["wake_queue_max"] = max((s.wake_queue for s in seen), default=None)
        row["wake_queue_last"] = seen[-1].wake_queue if seen else None
        out.append(row)
    return out


def rss_slopes(samples: Sequence[Sample], warmup_s: float) -> dict[str, float]:
    """MiB per minute of each process label's RSS after `warmup_s` (least squares over the samples)."""
    series: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for s in samples:
        if s.at_s >= warmup_s:
            for label, mib in s.rss_mib.items():
                series[label].append((s.at_s, mib))
    return {label: round(slope_per_min(points), 2) for label, points in sorted(series.items())}


def charts(samples: Sequence[Sample], rows: Sequence[dict[str, Any]], out_dir: Path,
           stem: str) -> list[Path]:
    """Three PNGs: latency p50/p95 and achieved rate per minute; projection lag over time; RSS per process and the
    database size over time. [] when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    mins = [r["minute"] for r in rows]

    fig, (lat, rate) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for kind, colour in (("write", "tab:blue"), ("recall", "tab:orange")):
        lat.plot(mins, [r[kind]["p50_ms"] for r in rows], "o-", color=colour, label=f"{kind} p50")
        lat.plot(mins, [r[kind]["p95_ms"] for r in rows], "s--", color=colour, label=f"{kind} p95")
        rate.plot(mins, [r[kind]["rate_per_s"] for r in rows], "o-", color=colour, label=f"{kind}s/s achieved")
    lat.set_ylabel("latency (ms, client wall)")
    lat.set_title("soak: latency per minute")
    lat.legend()
    lat.grid(alpha=0.3)
    rate.set_ylabel("answered 2xx per second")
    rate.set_xlabel("minute")
    rate.legend()
    rate.grid(alpha=0.3)
    paths.append(_save(fig, out_dir / f"{stem}-latency.png"))

    fig, ax = plt.subplots(figsize=(9, 4))
    ts = [s.at_s / 60 for s in samples]
    events = ax.plot(ts, [s.lag_events for s in samples], color="tab:red", label="events")
    ax.set_ylabel("lag (events)")
    ax.set_xlabel("minute")
    twin = ax.twinx()
    secs = twin.plot(ts, [s.lag_s for s in samples], color="tab:gray", linestyle="--", label="seconds")
    twin.set_ylabel("lag (s)")
    ax.set_title("soak: projection lag (the worst projection at each sample)")
    ax.grid(alpha=0.3)
    ax.legend(handles=events + secs, loc="upper right")
    paths.append(_save(fig, out_dir / f"{stem}-lag.png"))

    fig, (rss, db) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for label in sorted({k for s in samples for k in s.rss_mib}):
        rss.plot(ts, [s.rss_mib.get(label, float("nan")) for s in samples], label=label)
    rss.set_ylabel("RSS (MiB)")
    rss.set_title("soak: memory of each process of the stack")
    rss.legend(fontsize=8, ncol=2)
    rss.grid(alpha=0.3)
    db.plot(ts, [s.db_mib for s in samples], color="tab:green")
    db.set_ylabel("pg_database_size (MiB)")
    db.set_xlabel("minute")
    db.grid(alpha=0.3)
    paths.append(_save(fig, out_dir / f"{stem}-memory.png"))
    return paths


def _save(fig: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
