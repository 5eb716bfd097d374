"""The Darwinian decay sweep: decide status transitions with the clock it was given and append them as events.

    decay_sweep(engine, clock)            # every tenant
    decay_sweep(engine, clock, "acme")    # one tenant

The rules are in domain/decay.py. Each transition is one MemoryStatusChanged on the memory's stream, by the actor
"system:scheduler", carrying the clock, the reason and the inputs it used (ref_count, last_referenced_at,
idle_days, the threshold), so `projections rebuild` reproduces the statuses exactly: projectors apply the
decision, they never decide again. Then, with the same clock, every other decaying domain's units (knowledge
sections, session messages, transcript chunks, code symbols: workers/reference_decay.py). The sweep first brings
the read models it reads up to the log's head, and one sweep runs at a time (a PostgreSQL advisory lock), so a
second sweep with the same clock appends nothing. The report counts, per domain, the units examined and the
transitions by kind.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from sqlalchemy import Connection, Engine, text

from domain.decay import DecayPolicy, MemoryRefs, Transition, decide
from domain.errors import ConcurrencyConflict, NotCaughtUp
from domain.events import MemoryStatusChanged, NewEvent, memory_stream
from eventstore.append import append
from eventstore.read import head_position
from infra.settings import Settings, get_settings
from infra.wake import appended
from readmodels.item_domains import ItemDomain
from workers.reference_decay import DECAYING
from workers.reference_decay import by_tenant as units_by_tenant
from workers.reference_decay import transitions as unit_transitions

log = structlog.get_logger(__name__)
SCHEDULER_ACTOR = "system:scheduler"
APPEND_CHUNK = 500


def as_clock(clock: datetime | None) -> datetime:
    """A job's clock: the one given (naive means UTC), else now — read once, at the start."""
    if clock is None:
        return datetime.now(UTC)
    return clock if clock.tzinfo else clock.replace(tzinfo=UTC)


def sync_projections(engine: Engine, names: Sequence[str], timeout_s: float = 120.0) -> None:
    """Bring the named read models up to the log's current head (in this process, under their locks)."""
    from projections.registry import PROJECTORS
    from projections.runner import catch_up, has_reached

    batch = get_settings().projections.projection_batch_size
    with engine.connect() as conn:
        head = head_position(conn)
    if head == 0:
        return
    deadline = time.monotonic() + timeout_s
    pending = list(names)
    while True:
        for name in pending:
            catch_up(engine, PROJECTORS[name], batch, max_seconds=max(1.0, deadline - time.monotonic()))
        with engine.connect() as conn:
            pending = [n for n in pending if not has_reached(conn, PROJECTORS[n], head)]
        if not pending:
            return
        if time.monotonic() >= deadline:
            raise NotCaughtUp(f"projections {', '.join(pending)} did not reach position {head} in {timeout_s:g}s")
        time.sleep(0.05)


class JobBusy(RuntimeError):
    """Another run of the same lifecycle job holds its lock (a scheduled run then skips its turn)."""


@contextmanager
def job_lock(engine: Engine, name: str, wait: bool = True) -> Iterator[None]:
    """One run of a lifecycle job at a time across all processes: a session advisory lock, waited for unless
    `wait` is false, when a held lock raises JobBusy."""
    with engine.connect() as conn:
        key = f"engramlog.lifecycle.{name}"
        if wait:
            conn.execute(text("SELECT pg_advisory_lock(hashtext(:k))"), {"k": key})
        elif not conn.execute(text("SELECT pg_try_advisory_lock(hashtext(:k))"), {"k": key}).scalar_one():
            conn.rollback()
            raise JobBusy(f"another {name} run is in progress")
        conn.commit()
        try:
            yield
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(hashtext(:k))"), {"k": key})
            conn.commit()


def append_system_events(engine: Engine, tenant: str, events: Sequence[NewEvent], metadata: dict[str, Any],
                         retries: int = 3) -> list[int]:
    """Append one batch of system decisions atomically; a lost stream-version race is retried."""
    for attempt in range(retries + 1):
        try:
            with engine.begin() as conn:
                return append(conn, tenant, events, metadata)
        except ConcurrencyConflict:
            if attempt == retries:
                raise
            time.sleep(0.05 * (attempt + 1))
    return []


def _by_kind(transitions: Sequence[Transition]) -> dict[str, int]:
    return dict(sorted(Counter(f"{t.from_status} → {t.to_status}" for t in transitions).items()))


@dataclass
class UnitSweep:
    """One decaying domain's part of a sweep."""

    domain: str
    examined: int = 0
    transitions: list[Transition] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"domain": self.domain, "examined": self.examined, "transitions": len(self.transitions),
                "by_transition": _by_kind(self.transitions)}


@dataclass
class SweepReport:
    sweep_id: uuid.UUID
    clock: datetime
    examined: int = 0
    transitions: list[tuple[str, uuid.UUID, Transition]] = field(default_factory=list)
    units: dict[str, UnitSweep] = field(default_factory=dict)  # by unit: "sections", "messages", ...

    def counts(self) -> dict[str, int]:
        return _by_kind([t for _, _, t in self.transitions])

    def as_dict(self) -> dict[str, Any]:
        """The memories' figures at the top; each other domain's under its unit's name ("sections", "messages",
        "chunks", "symbols"), each with its domain, units examined, transitions and their kinds."""
        return {"sweep_id": str(self.sweep_id), "clock": self.clock.isoformat(), "examined": self.examined,
                "transitions": len(self.transitions), "by_transition": self.counts(),
                **{unit: u.as_dict() for unit, u in self.units.items()}}


# Candidates only (a superset of what can move); domain/decay.py decides exactly.
_CANDIDATES = text("""
SELECT m.tenant, m.memory_id, m.status, m.recorded_at, coalesce(a.access_count, 0) AS ref_count,
       a.last_access_at, a.last_reactivated_at, a.status_ref_count
FROM memories m
LEFT JOIN memory_activity a ON a.tenant = m.tenant AND a.memory_id = m.memory_id
WHERE (CAST(:tenant AS text) IS NULL OR m.tenant = :tenant)
  AND (   (m.status = 'active'
           AND greatest(m.recorded_at, a.last_access_at, a.last_reactivated_at) <= :dormant_cutoff)
       OR (m.status = 'dormant'
           AND greatest(m.recorded_at, a.last_access_at, a.last_reactivated_at) <= :archive_cutoff)
       OR (m.status IN ('dormant', 'archived') AND coalesce(a.access_count, 0) > a.status_ref_count)
       OR (m.status = 'staging'
           AND greatest(m.recorded_at, a.last_access_at, a.last_reactivated_at) <= :staging_cutoff))
ORDER BY m.tenant, m.memory_id
""")


def policy_from(settings: Settings) -> DecayPolicy:
    life = settings.lifecycle
    return DecayPolicy(life.dormant_after_days, life.archive_after_days, life.staging_ttl_days)


def find_transitions(conn: Connection, clock: datetime, policy: DecayPolicy,
                     tenant: str | None = None) -> tuple[int, list[tuple[str, uuid.UUID, Transition]]]:
    """(memories examined, the transitions decided) for the memories that may move at `clock`."""
    params = {"tenant": tenant,
              "dormant_cutoff": clock - timedelta(days=min(policy.dormant_after_days, policy.archive_after_days)),
              "archive_cutoff": clock - timedelta(days=policy.archive_after_days),
              "staging_cutoff": clock - timedelta(days=policy.staging_ttl_days)}
    found, examined = [], 0
    for r in conn.execute(_CANDIDATES, params):
        examined += 1
        refs = MemoryRefs(r.status, r.recorded_at, r.ref_count, r.last_access_at, r.last_reactivated_at,
                          r.status_ref_count)
        transition = decide(refs, clock, policy)
        if transition is not None:
            found.append((r.tenant, r.memory_id, transition))
    return examined, found


def _sweep_units(engine: Engine, d: ItemDomain, report: SweepReport, policy: DecayPolicy,
                 tenant: str | None, metadata: dict[str, Any]) -> int:
    """One domain's transitions at the sweep's clock (workers/reference_decay.py), appended and applied."""
    sync_projections(engine, (d.projection,))
    with engine.connect() as conn:
        examined, found = unit_transitions(conn, d, report.clock, policy, tenant)
    report.units[d.unit] = UnitSweep(d.name, examined, [tr for _, _, tr in found])
    count = 0
    for t, events in units_by_tenant(found).items():
        for i in range(0, len(events), APPEND_CHUNK):
            count += len(append_system_events(engine, t, events[i:i + APPEND_CHUNK], metadata))
    if found:
        sync_projections(engine, (d.projection,))
    return count


def decay_sweep(engine: Engine, clock: datetime | None = None, tenant: str | None = None,
                settings: Settings | None = None, wait: bool = True) -> SweepReport:
    """Run one sweep with `clock` (read once: now, when not given). Answers what it changed. With `wait`
    false, raise JobBusy instead of waiting for a sweep already running."""
    clock = as_clock(clock)
    settings = settings or get_settings()
    policy = policy_from(settings)
    report = SweepReport(uuid.uuid4(), clock)
    with job_lock(engine, "decay", wait):
        sync_projections(engine, ("memories", "activity"))
        with engine.connect() as conn:
            report.examined, report.transitions = find_transitions(conn, clock, policy, tenant)
        by_tenant: dict[str, list[NewEvent]] = {}
        for t, memory_id, tr in report.transitions:
            changed = MemoryStatusChanged(memory_id=memory_id, from_status=tr.from_status, to_status=tr.to_status,
                                          reason=tr.reason, clock=clock, inputs=tr.inputs)
            by_tenant.setdefault(t, []).append(NewEvent.of(changed, memory_stream(memory_id), occurred_at=clock))
        metadata = {"actor": SCHEDULER_ACTOR, "source": "decay_sweep", "correlation_id": str(report.sweep_id)}
        count = 0
        for t, events in by_tenant.items():
            for i in range(0, len(events), APPEND_CHUNK):
                count += len(append_system_events(engine, t, events[i:i + APPEND_CHUNK], metadata))
        if by_tenant:
            # Apply the decisions before the lock is released, so the next sweep reads them.
            sync_projections(engine, ("memories", "activity"))
        for d in DECAYING:
            count += _sweep_units(engine, d, report, policy, tenant, metadata)
        if count:
            appended(count)
    log.info("lifecycle.decay_swept", clock=clock.isoformat(), tenant=tenant, transitions=len(report.transitions),
             **{unit: len(u.transitions) for unit, u in report.units.items()},
             **{k.replace(" → ", "_to_"): v for k, v in report.counts().items()})
    return report
