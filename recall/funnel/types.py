"""What the stages pass along: one `Item` per candidate memory, and one `StageReport` per stage."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple


class Activity(NamedTuple):
    """A memory's recorded use (memory_activity, or its version under as_of): the ACT-R and feedback inputs."""
    access_count: int
    last_access_at: datetime | None
    used_count: int
    not_useful_count: int


@dataclass
class Item:
    """A candidate memory as it moves down the funnel. `score` is the current ranking score, in [0, 1]; each
    stage that changes it records its inputs and output under its own name in `stages`."""

    memory_id: uuid.UUID
    bm25: float | None = None
    cosine: float | None = None
    content: str = ""
    kind: str = ""
    status: str = "active"
    metadata: dict[str, Any] = field(default_factory=dict)
    occurred_at: datetime | None = None
    recorded_at: datetime | None = None
    confidence: float = 0.5
    activity: Activity | None = None  # None: never accessed nor given feedback
    relevance: float = 0.0  # the fused relevance (domain/ranking.fuse) the composite gates on
    calibrated: float = 0.0  # the calibrated chance it answers the query (recall/relevance.py), set before the gate
    score: float = 0.0
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def legs(self) -> list[str]:
        return [leg for leg, value in (("keyword", self.bm25), ("vector", self.cosine)) if value is not None]


@dataclass
class StageReport:
    name: str
    ms: float = 0.0
    counts: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    skipped: str | None = None  # why the stage did nothing, when it did nothing
    notes: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"stage": self.name, "ms": round(self.ms, 3), "counts": self.counts,
                               "config": self.config}
        if self.skipped:
            out["skipped"] = self.skipped
        if self.notes:
            out["notes"] = self.notes
        return out


@contextmanager
def timed(report: StageReport) -> Iterator[StageReport]:
    started = time.perf_counter()
    try:
        yield report
    finally:
        report.ms = (time.perf_counter() - started) * 1000


def rank(items: list[Item]) -> list[Item]:
    """Best first; ties broken by id so the same inputs always give the same order."""
    return sorted(items, key=lambda i: (-i.score, str(i.memory_id)))
