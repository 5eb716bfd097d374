"""Darwinian decay, pure: given a memory's status, reference statistics and a clock, the transition (if any).

A memory's last reference is the latest of: when it was recorded, its last access (a recall returned it, or
a write reinforced it; `memory_activity.last_access_at`), and its last reactivation (a reactivation is caused
by a reference, so it counts as one). Idle days are measured from that to the sweep's clock.

- active   → dormant    idle ≥ dormant_after_days (30). Dormant memories are still recalled, ranked lower.
- active   → archived   idle ≥ archive_after_days (90) already (a sweep that has not run for a long time).
- dormant  → archived   idle ≥ archive_after_days (90), counted from the last reference, not the transition.
- dormant / archived → active   referenced again after the transition: the access count has grown past the
                                 one the transition's decision saw (its inputs.ref_count). Counting accesses
                                 rather than comparing times keeps this right when sweeps run with a pinned or
                                 replayed clock.
- staging  → discarded  idle ≥ staging_ttl_days (14): never reinforced (nor recalled) within the TTL.

Every other status (pending, discarded, superseded, merged) is left alone. A second sweep with the same clock
finds nothing to do: the statuses it set are the ones it would set again, and a reactivation's clock is a
reference, so the reactivated memory is not idle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from domain.events import MemoryStatus
from domain.memory_status import RECALLABLE


@dataclass(frozen=True)
class DecayPolicy:
    dormant_after_days: float = 30.0
    archive_after_days: float = 90.0
    staging_ttl_days: float = 14.0


@dataclass(frozen=True)
class MemoryRefs:
    status: MemoryStatus
    recorded_at: datetime
    ref_count: int = 0
    last_access_at: datetime | None = None
    last_reactivated_at: datetime | None = None
    status_ref_count: int | None = None

    @property
    def last_referenced_at(self) -> datetime:
        return max(t for t in (self.recorded_at, self.last_access_at, self.last_reactivated_at) if t is not None)


@dataclass(frozen=True)
class Transition:
    from_status: MemoryStatus
    to_status: MemoryStatus
    reason: str
    inputs: dict[str, Any] = field(default_factory=dict)


def decide(refs: MemoryRefs, clock: datetime, policy: DecayPolicy) -> Transition | None:
    last = refs.last_referenced_at
    idle = (clock - last).total_seconds() / 86400.0
    inputs: dict[str, Any] = {"ref_count": refs.ref_count, "last_referenced_at": last.isoformat(),
                              "idle_days": round(idle, 4)}

    def to(status: MemoryStatus, reason: str, **extra: Any) -> Transition:
        return Transition(refs.status, status, reason, {**inputs, **extra})

    if refs.status in ("dormant", "archived") and refs.status_ref_count is not None \
            and refs.ref_count > refs.status_ref_count:
        return to("active", f"referenced again after becoming {refs.status} "
                            f"({refs.ref_count - refs.status_ref_count} new access(es))",
                  status_ref_count=refs.status_ref_count)
    if refs.status in RECALLABLE and idle >= policy.archive_after_days:
        return to("archived", f"unreferenced for {idle:.1f} days (archive after {policy.archive_after_days:g})",
                  threshold_days=policy.archive_after_days)
    if refs.status == "active" and idle >= policy.dormant_after_days:
        return to("dormant", f"unreferenced for {idle:.1f} days (dormant after {policy.dormant_after_days:g})",
                  threshold_days=policy.dormant_after_days)
    if refs.status == "staging" and idle >= policy.staging_ttl_days:
        return to("discarded", f"staging for {idle:.1f} days without reinforcement "
                               f"(TTL {policy.staging_ttl_days:g})", threshold_days=policy.staging_ttl_days)
    return None
