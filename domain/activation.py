"""ACT-R base-level activation, computed at query time from projected access statistics (recall stays read-only).

    B = ln(n + 1) − d · ln(age / (n + 1))

- n: accesses of the memory: each time a recall returned it (the hit-log, RecallServed) plus each
  reinforcement (MemoryReinforced); projected into `memory_activity.access_count`.
- age: hours since the last access (`memory_activity.last_access_at`); for a memory never accessed, hours
  since it was recorded. Ages below AGE_FLOOR_HOURS (one minute) count as that floor, so a memory accessed
  "just now" has a large but finite activation; a clock behind the access time also counts as the floor.
- d: the decay exponent, in [DECAY_MIN, DECAY_MAX] = [0.3, 0.6], default 0.5 (ENGRAMLOG_ACTR_DECAY). Larger d
  forgets faster.

The normalised form maps B into (0, 1) with the logistic σ((B − midpoint) / scale) so it can be blended with
other [0, 1] signals; with the defaults (midpoint 0, scale 1) a memory recorded an hour ago and never
accessed scores 0.5, one used ten times in the last hour ≈ 0.97, one untouched for thirty days ≈ 0.04.
"""

from __future__ import annotations

import math
from datetime import datetime

DECAY_MIN = 0.3
DECAY_MAX = 0.6
DECAY_DEFAULT = 0.5
AGE_FLOOR_HOURS = 1.0 / 60.0
NORMALISED_MIDPOINT = 0.0
NORMALISED_SCALE = 1.0


def check_decay(d: float) -> float:
    """Answer `d` when it is a valid decay exponent; raise ValueError otherwise."""
    if not isinstance(d, int | float) or math.isnan(d) or not DECAY_MIN <= d <= DECAY_MAX:
        raise ValueError(f"ACT-R decay d must be within [{DECAY_MIN}, {DECAY_MAX}], got {d!r}")
    return float(d)


def activation(n: int, age_hours: float, d: float = DECAY_DEFAULT) -> float:
    """Base-level activation B for `n` accesses, the last one `age_hours` ago."""
    check_decay(d)
    if n < 0:
        raise ValueError(f"access count must be >= 0, got {n}")
    age = max(float(age_hours), AGE_FLOOR_HOURS)
    return math.log(n + 1) - d * math.log(age / (n + 1))


def normalised_activation(n: int, age_hours: float, d: float = DECAY_DEFAULT,
                          midpoint: float = NORMALISED_MIDPOINT, scale: float = NORMALISED_SCALE) -> float:
    """Activation squashed into (0, 1) by the logistic: monotone in B, 0.5 at B = midpoint."""
    if scale <= 0:
        raise ValueError("scale must be > 0")
    z = (activation(n, age_hours, d) - midpoint) / scale
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def age_hours(now: datetime, last_access_at: datetime | None, recorded_at: datetime) -> float:
    """Hours since the last access, or since the memory was recorded when it was never accessed."""
    since = last_access_at if last_access_at is not None else recorded_at
    return (now - since).total_seconds() / 3600.0
