"""Decay of knowledge sections, run by the decay sweep (workers/lifecycle.py) with the sweep's clock.

The same rules as memories (domain/decay.py): a section unreferenced (no recall returned it, no agent drilled
into it) for dormant_after_days goes dormant, for archive_after_days archived; one referenced again after its
transition (its ref_count grew past the one the transition saw) is active again. Each decision is one
SectionStatusChanged on the section's stream, by system:scheduler, with the clock and its inputs, so a rebuild
of the knowledge projection reproduces the statuses exactly. Replaced and retired sections are left alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, text

from domain.decay import DecayPolicy, MemoryRefs, Transition, decide
from domain.events import NewEvent, SectionStatusChanged, section_stream

# Candidates only (a superset of what can move); domain/decay.py decides exactly.
_CANDIDATES = text("""
SELECT tenant, section_id, project, path, heading_path, content_hash, status, created_at, ref_count,
       last_referenced_at, status_ref_count
FROM knowledge_sections
WHERE (CAST(:tenant AS text) IS NULL OR tenant = :tenant)
  AND (   (status = 'active' AND greatest(created_at, last_referenced_at) <= :dormant_cutoff)
       OR (status = 'dormant' AND greatest(created_at, last_referenced_at) <= :archive_cutoff)
       OR (status IN ('dormant', 'archived') AND ref_count > status_ref_count))
ORDER BY tenant, section_id
""")


def section_transitions(conn: Connection, clock: datetime, policy: DecayPolicy,
                        tenant: str | None = None) -> tuple[int, list[tuple[str, NewEvent, Transition]]]:
    """(sections examined, one SectionStatusChanged per transition decided at `clock`, with its tenant)."""
    params = {"tenant": tenant,
              "dormant_cutoff": clock - timedelta(days=min(policy.dormant_after_days, policy.archive_after_days)),
              "archive_cutoff": clock - timedelta(days=policy.archive_after_days)}
    examined, found = 0, []
    for r in conn.execute(_CANDIDATES, params):
        examined += 1
        refs = MemoryRefs(r.status, r.created_at, r.ref_count, r.last_referenced_at, None, r.status_ref_count)
        tr = decide(refs, clock, policy)
        if tr is None:
            continue
        changed = SectionStatusChanged(section_id=r.section_id, path=r.path, project=r.project,
                                       heading_path=r.heading_path, content_hash=r.content_hash,
                                       from_status=tr.from_status, to_status=tr.to_status, reason=tr.reason,
                                       clock=clock, inputs=tr.inputs)
        found.append((r.tenant, NewEvent.of(changed, section_stream(r.section_id), occurred_at=clock), tr))
    return examined, found


def by_tenant(found: Sequence[tuple[str, NewEvent, Any]]) -> dict[str, list[NewEvent]]:
    out: dict[str, list[NewEvent]] = {}
    for tenant, event, _ in found:
        out.setdefault(tenant, []).append(event)
    return out


__all__ = ["by_tenant", "section_transitions"]
