"""Hebbian association edges: memories used together wire together; edges decay when not used.

Strengthening is log-space: each validated co-use moves the weight from w to ln(e^w + 1), i.e. it adds one
to e^w. From no edge (w = 0 counts as e^0 = 1) the weights after k co-uses are ln(k + 1): 0.69, 1.10, 1.39, …,
fast at first, then slower, and never above HEBBIAN_CAP (ln 21 ≈ 3.04, reached after 20 co-uses).

Validation gate: a pair is strengthened only when a client's RecallFeedbackGiven marks BOTH memories 'used'
for the same recall, and both were among that recall's served results (the RecallServed hit-log event of
that recall_id). Memories merely recalled together, or marked used in different recalls, or one 'used' and
the other 'not_useful', do not strengthen anything.

Decay: a Hebbian edge's weight halves every HEBBIAN_HALF_LIFE_DAYS (30 days) since its `updated_at`. The
stored weight is the weight at `updated_at`; the decay is applied when the edge is read (at query time) and,
before strengthening, at the strengthening event's recorded time — never with the clock of the machine
applying the event, so a replay reproduces the same weights. Semantic edges (set by consolidation) and causal
edges (supersede: new → old) do not decay at read time: consolidation recomputes the former, the latter are
history.

These constants are part of the read model's definition (rebuild and verify replay with them), so they are
code, not environment knobs.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable
from datetime import datetime

HEBBIAN_CAP = math.log(21.0)
HEBBIAN_HALF_LIFE_DAYS = 30.0
CAUSAL_WEIGHT = 1.0
# Kinds whose edges decay when read, with their half-life in days.
HALF_LIFE_DAYS: dict[str, float] = {"hebbian": HEBBIAN_HALF_LIFE_DAYS}
# Kinds with a direction (source → target); the others are stored with source_id < target_id.
DIRECTED_KINDS = frozenset({"causal"})


def decayed(weight: float, updated_at: datetime, at: datetime, kind: str = "hebbian") -> float:
    """The weight of an edge of `kind`, stored as `weight` at `updated_at`, as seen at `at`."""
    half_life = HALF_LIFE_DAYS.get(kind)
    if half_life is None:
        return weight
    days = max(0.0, (at - updated_at).total_seconds() / 86400.0)
    return weight * 0.5 ** (days / half_life)


def strengthen(weight: float) -> float:
    """One validated co-use: w ← min(cap, ln(e^w + 1))."""
    return min(HEBBIAN_CAP, math.log(math.exp(min(weight, HEBBIAN_CAP)) + 1.0))


def canonical(source: uuid.UUID, target: uuid.UUID, kind: str) -> tuple[uuid.UUID, uuid.UUID]:
    """Undirected kinds are stored once, lowest id first."""
    if kind in DIRECTED_KINDS or str(source) <= str(target):
        return source, target
    return target, source


def validated_pairs(used: Iterable[uuid.UUID], served: Iterable[uuid.UUID]) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """The gate: the pairs of distinct memories both marked used AND both served by the recall, canonical."""
    served_set = set(served)
    ids = sorted({m for m in used if m in served_set}, key=str)
    return [(a, b) for i, a in enumerate(ids) for b in ids[i + 1:]]
