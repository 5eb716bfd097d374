"""Decay by reference of every domain's recalled units, run by the decay sweep (workers/lifecycle.py) with its clock.

The same rules as memories (domain/decay.py): a unit unreferenced (no recall returned it, no agent drilled into
it) for dormant_after_days goes dormant, for archive_after_days archived; one referenced again after its
transition (its ref_count grew past the one the transition saw) is active again. Each decision is one
status-changed event on the unit's own stream, by system:scheduler, with the clock and its inputs; the domain's
projector applies it (status, and status_ref_count from inputs.ref_count), so a rebuild reproduces the statuses
exactly. Idle time counts from the latest of the unit's creation, its last reference and its last reactivation
(the clock of its last decision back to active: a reactivation is caused by a reference, so it counts as one,
as for memories; a second sweep with the same clock then finds nothing to do).

The unit of each domain is what its recall hits name (the handle in RecallServed and ResultDrilled, counted by
the domain's projector into ref_count / last_referenced_at):

- knowledge: a section (document, heading path, text), named by {path, heading_path, content_hash};
  SectionStatusChanged.
- sessions: a sent message, named by {session_id, message_id}: the hit only, not its window (the neighbours are
  context the recall showed around it, not what it found); SessionMessageStatusChanged.
- transcripts: a chunk (transcript, position, text), named by {transcript_id, ord, content_hash};
  TranscriptChunkStatusChanged.
- code: a symbol, named by {repo, file, qualified_name}. Its row is made anew for each version of its file, so
  the unit is the qualified name in its file: its status, like its reference count, is carried across versions
  (and goes with the file when the file is removed); CodeSymbolStatusChanged.

Only units in active, dormant or archived move: replaced and retired ones (a later version holds other text)
are history and are left alone, as are pending (unsent) messages. A session message's creation is when the log
recorded it sent (sent_at: its append, or its SessionMessageSent), not its client-given created_at, which may be
years old for an imported conversation.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, text

from domain.decay import DecayPolicy, MemoryRefs, Transition, decide
from domain.events import DecayStatus, NewEvent
from readmodels.item_domains import ITEM_DOMAINS, ItemDomain

# What the sweep decides each domain by (readmodels/item_domains.py): its projection (brought up to the head
# before and after), its units table, the columns naming a unit with those its status event carries (one decision
# per distinct key), its creation column, which rows may decay at all, and its status-changed event and stream.
DECAYING: tuple[ItemDomain, ...] = ITEM_DOMAINS


def _statuses(tr: Transition) -> tuple[DecayStatus, DecayStatus]:
    """A unit's decision between the decay statuses: the candidates are active, dormant or archived units, and
    decide moves those among the same three."""
    f, t = tr.from_status, tr.to_status
    if f in ("active", "dormant", "archived") and t in ("active", "dormant", "archived"):
        return f, t
    raise ValueError(f"not a decaying unit's transition: {f} -> {t}")


def _columns(d: ItemDomain) -> tuple[str, ...]:
    return (*d.key_columns, *d.carried)


def event_of(d: ItemDomain, r: Any, tr: Transition, clock: datetime) -> NewEvent:
    """The status-changed event of a decision on the unit of candidate row `r`: its key and carried columns that are
    the event's fields, the decision, on the unit's stream."""
    from_status, to_status = _statuses(tr)
    fields = {c: getattr(r, c) for c in _columns(d) if c in d.status_event.model_fields}
    return NewEvent.of(d.status_event(**fields, from_status=from_status, to_status=to_status, reason=tr.reason,
                                      clock=clock, inputs=tr.inputs), d.stream_of(r), occurred_at=clock)


def _candidates(d: ItemDomain) -> Any:
    """Candidates only (a superset of what can move); domain/decay.py decides exactly. One row per key: a code
    file may define a qualified name twice, and its rows share one status."""
    keys = ", ".join(_columns(d))
    last = f"greatest({d.created_column}, last_referenced_at, last_reactivated_at)"
    return text(f"""
    SELECT DISTINCT ON (tenant, {keys}) tenant, {keys}, status, {d.created_column} AS created_at, ref_count,
           last_referenced_at, last_reactivated_at, status_ref_count
    FROM {d.table}
    WHERE (CAST(:tenant AS text) IS NULL OR tenant = :tenant) AND ({d.decays})
      AND (   (status = 'active' AND {last} <= :dormant_cutoff)
           OR (status = 'dormant' AND {last} <= :archive_cutoff)
           OR (status IN ('dormant', 'archived') AND ref_count > status_ref_count))
    ORDER BY tenant, {keys}
    """)


def transitions(conn: Connection, d: ItemDomain, clock: datetime, policy: DecayPolicy,
                tenant: str | None = None) -> tuple[int, list[tuple[str, NewEvent, Transition]]]:
    """(units examined, one status-changed event per transition decided at `clock`, with its tenant)."""
    params = {"tenant": tenant,
              "dormant_cutoff": clock - timedelta(days=min(policy.dormant_after_days, policy.archive_after_days)),
              "archive_cutoff": clock - timedelta(days=policy.archive_after_days)}
    examined, found = 0, []
    for r in conn.execute(_candidates(d), params):
        examined += 1
        refs = MemoryRefs(r.status, r.created_at, r.ref_count, r.last_referenced_at, r.last_reactivated_at,
                          r.status_ref_count)
        tr = decide(refs, clock, policy)
        if tr is not None:
            found.append((r.tenant, event_of(d, r, tr, clock), tr))
    return examined, found


def by_tenant(found: Sequence[tuple[str, NewEvent, Any]]) -> dict[str, list[NewEvent]]:
    out: dict[str, list[NewEvent]] = {}
    for tenant, event, _ in found:
        out.setdefault(tenant, []).append(event)
    return out


__all__ = ["DECAYING", "by_tenant", "event_of", "transitions"]
