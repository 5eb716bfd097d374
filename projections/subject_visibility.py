"""The `analytics_subject_events` read model: for each event of a knowledge document, a session, a transcript or a
code file, whether the tenant's privacy policy hides it, decided by the event export's own rule
(recall/event_privacy.py event_hidden: each type by its domain's item identity), and under which policy (the
position of its PrivacyPolicySet, 0 for none). Kept by the privacy projector (projections/privacy.py), in log
order, so the policy of a decision is the privacy_policies row as of that event:

- a subject event is decided when it is applied, under the policy in force then;
- a PrivacyPolicySet re-decides every subject event of its tenant before it, under the new policy;
- a DocumentPut re-decides its document's earlier events (the rule reads a document's current tags).

analytics.events (migration 0027) shows a subject event only when it is decided visible under the policy the log
holds now, so an event not decided yet, or decided under an older policy (the projector behind), is left out: the
view fails closed. A rebuild gives the same rows: each stream's last decision is made with the same inputs.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, text

from domain.events import (
    CodeFilePut,
    CodeFileRemoved,
    CodeSymbolStatusChanged,
    DocumentPut,
    DocumentRetired,
    EventSchema,
    RecordedEvent,
    SectionStatusChanged,
    SessionMessagesAppended,
    SessionMessageSent,
    SessionMessageStatusChanged,
    TranscriptChunksPut,
    TranscriptChunkStatusChanged,
)
from domain.privacy import NO_POLICY, PrivacyPolicy
from eventstore.query import EventFilter, query_page
from eventstore.read import Checkpoint
from eventstore.stream import read_stream
from recall.event_privacy import Gate, event_hidden

SUBJECT_TYPES: tuple[type[EventSchema], ...] = (
    DocumentPut, DocumentRetired, SectionStatusChanged,
    SessionMessagesAppended, SessionMessageSent, SessionMessageStatusChanged,
    TranscriptChunksPut, TranscriptChunkStatusChanged,
    CodeFilePut, CodeFileRemoved, CodeSymbolStatusChanged)
_NAMES = tuple(t.type_name() for t in SUBJECT_TYPES)
_PAGE = 1000

_POLICY = text("SELECT policy, position FROM privacy_policies WHERE tenant = :tenant")
_UPSERT = text("""
INSERT INTO analytics_subject_events (tenant, position, policy_position, hidden)
VALUES (:tenant, :position, :policy_position, :hidden)
ON CONFLICT (tenant, position) DO UPDATE SET policy_position = EXCLUDED.policy_position, hidden = EXCLUDED.hidden
""")


def _policy(conn: Connection, tenant: str) -> tuple[PrivacyPolicy, int]:
    row = conn.execute(_POLICY, {"tenant": tenant}).first()
    return (NO_POLICY, 0) if row is None else (PrivacyPolicy.of(row.policy), int(row.position))


def _decide(conn: Connection, tenant: str, policy: PrivacyPolicy, at: int, events: Iterable[RecordedEvent]) -> None:
    gate = Gate(conn, tenant, policy, set())
    rows = [{"tenant": tenant, "position": e.position, "policy_position": at,
             "hidden": not policy.empty and event_hidden(gate, e)} for e in events]
    if rows:
        conn.execute(_UPSERT, rows)


def subject_event(conn: Connection, event: RecordedEvent, _: EventSchema) -> None:
    """A subject event, under the policy in force as of it; a put re-decides its document's events before it."""
    policy, at = _policy(conn, event.tenant)
    if event.is_a(DocumentPut):
        earlier = [e for e in read_stream(conn, event.tenant, event.stream_id, SUBJECT_TYPES)
                   if e.position < event.position]
        _decide(conn, event.tenant, policy, at, [*earlier, event])
    else:
        _decide(conn, event.tenant, policy, at, [event])


def policy_set(conn: Connection, event: RecordedEvent) -> None:
    """After the policy row took `event`: every subject event of its tenant before it, under the new policy."""
    policy, at = _policy(conn, event.tenant)
    f = EventFilter(event.tenant, types=_NAMES, before_position=event.position)
    while True:
        events, more = query_page(conn, f, _PAGE)
        _decide(conn, event.tenant, policy, at, events)
        if not more or not events:
            return
        f = EventFilter(event.tenant, types=_NAMES, before_position=event.position,
                        after_cursor=Checkpoint(events[-1].tx_id, events[-1].position))


__all__ = ["SUBJECT_TYPES", "policy_set", "subject_event"]
