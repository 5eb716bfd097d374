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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from domain.events import PRIVACY_STREAM, MemoryRecorded, RecordedEvent, memory_stream
from domain.privacy import NO_POLICY, PrivacyPolicy
from eventstore.stream import last_event, read_streams
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


def _records(value: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object in a value, the value itself included."""
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _records(v)
    elif isinstance(value, list):
        for v in value:
            yield from _records(v)


def _names_excluded(policy: PrivacyPolicy, data: dict[str, Any]) -> bool:
    """Whether any object in an event's data is an excluded item by its own fields (a MemoryRecorded, a
    document's put, a section handle's path, a recall's scope, a transcript's put or chunk handle by its id)."""
    for record in _records(data):
        tags = record.get("tags")
        fields = {**record, "tags": tags if isinstance(tags, list) else ()}
        for key in ("path", "agent_id", "project", "session_id"):
            if not isinstance(fields.get(key), str):
                fields.pop(key, None)
        if isinstance(record.get("transcript_id"), str) and "session_id" not in fields:
            fields["session_id"] = record["transcript_id"]  # a transcript is gated by its id (exclude_sessions)
        if policy.excludes_record(fields):
            return True
    return False


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


def hidden_memories(conn: Connection, tenant: str, policy: PrivacyPolicy, ids: Iterable[str | uuid.UUID]) -> set[str]:
    """Those of `ids` (as lower-case strings) that are memories of the tenant the policy excludes, decided on
    each one's MemoryRecorded (the first on its stream)."""
    if policy.empty:
        return set()
    streams = sorted({memory_stream(uuid.UUID(str(i))) for i in ids})
    recorded: dict[str, dict[str, Any]] = {}
    for event in read_streams(conn, tenant, streams, (MemoryRecorded,)):
        recorded.setdefault(event.stream_id, event.data)  # oldest first: a memory is recorded once
    return {stream[len(_MEMORY_STREAM):] for stream, data in recorded.items() if _names_excluded(policy, data)}


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
    out = []
    for e in events:
        if _names_excluded(policy, e.data):
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
    else without the results naming an excluded item: a memory by its recording, another domain's by its handle
    and, where the domain is registered, by its own fetch. When a result was dropped the funnel's explanation
    and the per-result stages go too: they may quote what the dropped results held (terms, entities)."""
    if policy.empty:
        return record
    if _names_excluded(policy, {"scope": record.get("scope") or {}}):
        return None
    from recall.domains.registry import DOMAINS  # the seam's registry imports the funnel: only when needed
    from recall.scope import Scope

    results = record.get("results") or []
    hidden = hidden_memories(conn, tenant, policy, [r["memory_id"] for r in results if r.get("memory_id")])

    def shown(r: dict[str, Any]) -> bool:
        if r.get("memory_id") is not None:
            return str(r["memory_id"]) not in hidden
        handle = r.get("handle") or {}
        if _names_excluded(policy, handle):
            return False
        domain = DOMAINS.get(r.get("domain") or "")
        return domain is None or domain.fetch(conn, Scope(tenant), handle, policy) is not None

    kept = [r for r in results if shown(r)]
    if len(kept) == len(results):
        return record
    return {**record, "results": [{**r, "stages": {}} for r in kept], "explanation": {}}


__all__ = ["PolicyInForce", "hidden_memories", "memory_hidden", "policy_in_force", "policy_of", "visible_events",
           "visible_history", "visible_memory",
           "visible_recall_record"]
