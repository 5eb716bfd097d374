"""The privacy gate's reads: the tenant's policy in force, and which memories and events it hides.

The policy is read from the log, not from the privacy_policies read model: the latest PrivacyPolicySet on the
tenant's policy-privacy stream, one probe of the (tenant, stream_id, stream_version) key (the stream holds one
event per PUT). So a policy is in force from the moment its PUT commits, for every process, whatever the
projectors' lag, a rebuild in progress or a stopped worker: a policy that only a caught-up projector made
effective would leak in between. Every gated route reads it once per request (`policy_of`).

Which memories an event names is also decided from the log (each memory's MemoryRecorded: its agent, project,
session and tags), so the export hides a memory's events even before the memories read model has it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from domain.events import PRIVACY_STREAM, MemoryRecorded, RecordedEvent
from domain.privacy import NO_POLICY, PrivacyPolicy, scope_excluded
from eventstore.stream import last_event
from recall.event_privacy import Gate, deep_recall_served, event_hidden, names_excluded
from recall.memory_privacy import hidden_memories
from recall.queries import History

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_MEMORY_STREAM = "memory-"


@dataclass(frozen=True)
class PolicyInForce:
    policy: PrivacyPolicy
    position: int | None = None  # of its PrivacyPolicySet; None: the tenant never set one
    updated_at: datetime | None = None


def policy_in_force(conn: Connection, tenant: str) -> PolicyInForce:
    """The tenant's latest PrivacyPolicySet, read from the log (see the module's docstring)."""
    event = last_event(conn, tenant, PRIVACY_STREAM)
    if event is None:
        return PolicyInForce(NO_POLICY)
    return PolicyInForce(PrivacyPolicy.of(event.payload().model_dump()), event.position, event.recorded_at)


def policy_of(conn: Connection, tenant: str) -> PrivacyPolicy:
    """The tenant's privacy policy in force (NO_POLICY when none was set)."""
    return policy_in_force(conn, tenant).policy


def _names_excluded(policy: PrivacyPolicy, data: dict[str, Any]) -> bool:
    """For an event type without content of its own (a memory's decisions, a consolidation's report): whether any
    object in its data holds an excluded item's fields."""
    return names_excluded(policy, data)


def _uuids(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield from (m.lower() for m in _UUID.findall(value))
    elif isinstance(value, dict):
        for v in value.values():
            yield from _uuids(v)
    elif isinstance(value, list):
        for v in value:
            yield from _uuids(v)


def _named_ids(event: RecordedEvent) -> set[str]:
    """The ids an event names (its data's uuids, its stream's memory): some of them memories."""
    ids = set(_uuids(event.data))
    if event.stream_id.startswith(_MEMORY_STREAM):
        ids.update(_uuids(event.stream_id))
    return ids


def memory_hidden(conn: Connection, tenant: str, policy: PrivacyPolicy, memory_id: uuid.UUID) -> bool:
    return bool(hidden_memories(conn, tenant, policy, [memory_id]))


def visible_events(conn: Connection, tenant: str, policy: PrivacyPolicy,
                   events: Sequence[RecordedEvent]) -> list[RecordedEvent]:
    """The events a non-operator may read: not an excluded item itself (a MemoryRecorded of an excluded agent,
    project, session or tag; a document put at an excluded path; a recall scoped to one) and naming no excluded
    memory (its decisions, supersedes, merges, edges, the recalls that returned it, the feedback on it). One
    event is shown amended rather than dropped: a visible memory's MemoryRecorded that supersedes an excluded
    one, with `supersedes` empty, so the reader still has every visible memory's recording."""
    if policy.empty or not events:
        return list(events)
    named = {e.event_id: _named_ids(e) for e in events}
    hidden = hidden_memories(conn, tenant, policy, set().union(*named.values()))
    gate = Gate(conn, tenant, policy, hidden)
    out = []
    for e in events:
        # Each content-bearing type by its domain's own item identity (recall/event_privacy.py), the others by
        # the fields their data holds; every one also by the memories it names.
        if event_hidden(gate, e) if gate.decides(e) else _names_excluded(policy, e.data):
            continue
        if e.is_a(MemoryRecorded) and str(e.data.get("supersedes")) in hidden:
            # A visible memory's own recording stays, without the excluded memory it replaced (as GET by id).
            e = replace(e, data={**e.data, "supersedes": None})
            if hidden.isdisjoint(_named_ids(e)):
                out.append(e)
        elif hidden.isdisjoint(named[e.event_id]):
            out.append(e)
    return out


_MEMORY_LINKS = ("supersedes", "superseded_by", "merged_into")


def visible_memory(conn: Connection, tenant: str, policy: PrivacyPolicy, row: dict[str, Any]) -> dict[str, Any] | None:
    """A memory row as a caller may see it: None when the policy excludes it; else with its links to an excluded
    memory (what it supersedes, what superseded it, what it was merged into) left empty."""
    if policy.empty:
        return row
    if policy.excludes_record(row):
        return None
    hidden = hidden_memories(conn, tenant, policy, [row[k] for k in _MEMORY_LINKS if row.get(k) is not None])
    return {k: None if k in _MEMORY_LINKS and str(v) in hidden else v for k, v in row.items()}


def visible_history(conn: Connection, tenant: str, policy: PrivacyPolicy, found: History) -> History:
    """A supersede chain without its excluded memories and every step to or from one; `current` is the newest
    memory left (the caller answers 404 when the memory asked for is itself excluded)."""
    ids = [m["memory_id"] for m in found.chain] + [s["superseded_by"] for s in found.steps]
    hidden = hidden_memories(conn, tenant, policy, ids)
    if not hidden:
        return found
    chain = [m for m in found.chain if str(m["memory_id"]) not in hidden]
    steps = [s for s in found.steps if str(s["memory_id"]) not in hidden and str(s["superseded_by"]) not in hidden]
    return History(current=chain[-1]["memory_id"] if chain else found.current, chain=chain, steps=steps)


def visible_recall_record(conn: Connection, tenant: str, policy: PrivacyPolicy,
                          record: dict[str, Any]) -> dict[str, Any] | None:
    """A recall's record (recall/service.py get_recall) as a caller may see it under the policy in force now (the
    recall may have been served before it): None (answered 404) when the recall was scoped to excluded items;
    else without the results naming an excluded item: each by its domain's identity (recall/event_privacy.py)
    and, where the domain is registered, by its own fetch. When a result was dropped the funnel's explanation
    and the per-result stages go too: they may quote what the dropped results held (terms, entities). A deep
    recall's audit (explanation.deep_recall: its code, printed output, live calls, sub-calls, answer) goes when it
    touched an item hidden now (recall/event_privacy.py deep_recall_served)."""
    if policy.empty:
        return record
    if scope_excluded(policy, record.get("scope") or {}):
        return None
    from recall.domains.registry import DOMAINS  # the seam's registry imports the funnel: only when needed
    from recall.scope import Scope

    results = record.get("results") or []
    hidden = hidden_memories(conn, tenant, policy, [r["memory_id"] for r in results if r.get("memory_id")])
    gate = Gate(conn, tenant, policy, hidden)

    def shown(r: dict[str, Any]) -> bool:
        if gate.result_hidden(r.get("domain") or "memories", r.get("handle"), r.get("memory_id")):
            return False
        if r.get("memory_id") is not None:
            return True
        domain = DOMAINS.get(r.get("domain") or "")
        return domain is None or domain.fetch(conn, Scope(tenant), r.get("handle") or {}, policy) is not None

    kept = [r for r in results if shown(r)]
    deep = (record.get("explanation") or {}).get("deep_recall")
    deep_hidden = isinstance(deep, dict) and deep_recall_served(gate, deep, record.get("position") or 0)
    if len(kept) == len(results) and not deep_hidden:
        return record
    return {**record, "results": [{**r, "stages": {}} for r in kept], "explanation": {}}


__all__ = ["PolicyInForce", "hidden_memories", "memory_hidden", "policy_in_force", "policy_of", "visible_events",
           "visible_history", "visible_memory",
           "visible_recall_record"]
