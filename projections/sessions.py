"""Session messages' read models: session_messages (in session order), sessions (one summary row each) and BM25
postings over sent messages (session_postings / _terms / _stats, for recall/domains/sessions.py).

Only applies events; decides nothing. The rules are the fold's (domain/sessions/messages.py): seq in apply order,
a message_id the session already holds is ignored, a sent mark for an unknown message changes nothing, the
session's agent and project are its first append's. A message is indexed for BM25 when it is sent (appended
sent, or marked later), so a pending message is in no posting.

| event                   | effect                                                                             |
| ----------------------- | ---------------------------------------------------------------------------------- |
| SessionMessagesAppended | its new messages inserted (seq = the session's count + 1, ...); the sent ones      |
|                         | indexed; the session's counts, first/last times and last position                   |
| SessionMessageSent      | the message sent (if it was pending) and indexed; the session's sent count + 1     |
| SessionMessageStatus-   | a message still in from_status moves to to_status, status_ref_count = the decision's |
| Changed                 | inputs.ref_count (the decay sweep's decision, workers/reference_decay.py)           |
| RecallServed            | each "sessions" result's message (its handle names the hit, not the window):       |
|                         | ref_count + 1, last_referenced_at = the event's time                               |
| ResultDrilled           | its "sessions" message likewise                                                    |

After each of the first three, the messages it changed get a recorded-time version at the event's position
(session_message_versions: readmodels/unit_versions.py), what `as_of` reads.

Every time comes from the event (a message's created_at, else the event's occurred_at; sent_at, the time the log
recorded the event that made it sent), so a rebuild gives the same rows.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence

import structlog
from sqlalchemy import Connection, text

from domain.events import (
    RecallServed,
    RecordedEvent,
    ResultDrilled,
    SessionMessagesAppended,
    SessionMessageSent,
    SessionMessageStatusChanged,
    session_stream,
)
from domain.sessions.messages import line_of
from domain.text import term_frequencies
from projections.base import OneByOne, apply_in_order, types_of
from projections.postings import PostingsTables, index
from projections.references import ReferencedUnits
from projections.unit_status import status_changed
from readmodels.item_domains import MESSAGES

log = structlog.get_logger(__name__)
_NAMESPACE = uuid.UUID("2b9d4c61-7a0e-4f3b-8e15-5c2a9d7f0e83")  # engramlog session messages

MESSAGE_POSTINGS = PostingsTables(MESSAGES.postings)
MESSAGE_REFERENCES = ReferencedUnits(MESSAGES)


def message_uid(tenant: str, session_id: str, message_id: str) -> uuid.UUID:
    return uuid.uuid5(_NAMESPACE, json.dumps([tenant, session_id, message_id]))


_SESSION = text("SELECT agent_id, project, messages FROM sessions WHERE tenant = :tenant AND session_id = :session_id")
_KNOWN = text("""
SELECT message_id FROM session_messages WHERE tenant = :tenant AND session_id = :session_id
  AND message_id = ANY(:ids)
""")
_INSERT = text("""
INSERT INTO session_messages (tenant, session_id, seq, message_id, message_uid, role, content, tool_name, name,
                              tool_call_id, tool_calls, created_at, sent, checkpoint, agent_id, project, metadata,
                              length, distinct_terms, position, sent_at)
SELECT :tenant, :session_id, b.seq, b.message_id, b.uid, b.role, b.content, b.tool_name, b.name, b.tool_call_id,
       b.tool_calls, b.created_at, b.sent, b.checkpoint, :agent_id, :project, b.metadata, b.length, b.distinct_terms,
       :position, CASE WHEN b.sent THEN CAST(:at AS timestamptz) END
FROM unnest(CAST(:seqs AS int[]), CAST(:ids AS text[]), CAST(:uids AS uuid[]), CAST(:roles AS text[]),
            CAST(:contents AS text[]), CAST(:tool_names AS text[]), CAST(:names AS text[]),
            CAST(:tool_call_ids AS text[]), CAST(:tool_calls AS jsonb[]), CAST(:created AS timestamptz[]),
            CAST(:sents AS boolean[]), CAST(:checkpoints AS boolean[]), CAST(:metadatas AS jsonb[]),
            CAST(:lengths AS int[]), CAST(:distincts AS int[]))
     AS b(seq, message_id, uid, role, content, tool_name, name, tool_call_id, tool_calls, created_at, sent,
          checkpoint, metadata, length, distinct_terms)
""")
_UPSERT_SESSION = text("""
INSERT INTO sessions (tenant, session_id, agent_id, project, messages, sent_messages, first_at, last_at,
                      last_position)
VALUES (:tenant, :session_id, :agent_id, :project, :n, :n_sent, :first_at, :last_at, :position)
ON CONFLICT (tenant, session_id) DO UPDATE SET
    messages = sessions.messages + EXCLUDED.messages,
    sent_messages = sessions.sent_messages + EXCLUDED.sent_messages,
    first_at = least(sessions.first_at, EXCLUDED.first_at), last_at = greatest(sessions.last_at, EXCLUDED.last_at),
    last_position = greatest(sessions.last_position, EXCLUDED.last_position)
""")
_MARK_SENT = text("""
UPDATE session_messages SET sent = true, sent_at = :at
WHERE tenant = :tenant AND session_id = :session_id AND message_id = :message_id AND NOT sent
RETURNING message_uid, content
""")
_SENT_COUNT = text("""
UPDATE sessions SET sent_messages = sent_messages + 1, last_position = greatest(last_position, :position)
WHERE tenant = :tenant AND session_id = :session_id
""")
def _on_own_stream(event: RecordedEvent, session_id: str) -> bool:
    """The write path puts a session's events on its stream; one elsewhere (the generic append) is ignored by
    every run alike, as the fold (which reads only the session's stream) ignores it."""
    if event.stream_id == session_stream(session_id):
        return True
    log.warning("sessions.event_off_stream", position=event.position, stream_id=event.stream_id)
    return False


def _appended(conn: Connection, event: RecordedEvent, p: SessionMessagesAppended) -> None:
    if not _on_own_stream(event, p.session_id):
        return
    tenant, session = event.tenant, {"tenant": event.tenant, "session_id": p.session_id}
    row = conn.execute(_SESSION, session).first()
    agent_id, project, count = (row.agent_id, row.project, row.messages) if row else (p.agent_id, p.project, 0)
    known = set(conn.execute(_KNOWN, {**session, "ids": [m.message_id for m in p.messages]}).scalars())
    fresh = [m for m in p.messages if m.message_id not in known]
    if not fresh:
        return
    cols: dict[str, list] = {k: [] for k in ("seqs", "ids", "uids", "roles", "contents", "tool_names", "names",
                                            "tool_call_ids", "tool_calls", "created", "sents", "checkpoints",
                                            "metadatas", "lengths", "distincts")}
    to_index = []
    for i, m in enumerate(fresh):
        line = line_of(m, count + 1 + i, event.occurred_at)
        tfs = term_frequencies(line.text)
        uid = message_uid(tenant, p.session_id, m.message_id)
        for key, value in (("seqs", line.seq), ("ids", m.message_id), ("uids", uid), ("roles", m.role),
                           ("contents", line.text), ("tool_names", m.tool_name), ("names", m.name),
                           ("tool_call_ids", m.tool_call_id),
                           ("tool_calls", None if m.tool_calls is None else json.dumps(m.tool_calls)),
                           ("created", line.created_at), ("sents", m.sent), ("checkpoints", m.checkpoint),
                           ("metadatas", json.dumps(m.metadata)), ("lengths", sum(tfs.values())),
                           ("distincts", len(tfs))):
            cols[key].append(value)
        if m.sent:
            to_index.append((uid, tfs))
    conn.execute(_INSERT, {**session, **cols, "agent_id": agent_id, "project": project, "position": event.position,
                           "at": event.recorded_at})
    index(conn, MESSAGE_POSTINGS, tenant, to_index)
    conn.execute(_UPSERT_SESSION, {**session, "agent_id": agent_id, "project": project, "n": len(fresh),
                                   "n_sent": len(to_index), "first_at": min(cols["created"]),
                                   "last_at": max(cols["created"]), "position": event.position})
    MESSAGES.versions.snapshot(conn, tenant, event.position, "u.message_uid = ANY(:uids)", {"uids": cols["uids"]})


def _sent(conn: Connection, event: RecordedEvent, p: SessionMessageSent) -> None:
    if not _on_own_stream(event, p.session_id):
        return
    session = {"tenant": event.tenant, "session_id": p.session_id}
    row = conn.execute(_MARK_SENT, {**session, "message_id": p.message_id, "at": event.recorded_at}).first()
    if row is None:  # unknown, or already sent
        return
    index(conn, MESSAGE_POSTINGS, event.tenant, [(row.message_uid, term_frequencies(row.content))])
    conn.execute(_SENT_COUNT, {**session, "position": event.position})
    MESSAGES.versions.snapshot(conn, event.tenant, event.position, "u.message_uid = :uid", {"uid": row.message_uid})


_ONE_BY_ONE: OneByOne = {SessionMessagesAppended: _appended, SessionMessageSent: _sent,
                         SessionMessageStatusChanged: status_changed(MESSAGES), RecallServed: MESSAGE_REFERENCES.served,
                         ResultDrilled: MESSAGE_REFERENCES.drilled}


class SessionsProjector:
    name = MESSAGES.projection
    tables = ("sessions", "session_messages", *MESSAGES.postings.tables, "session_message_versions")
    handlers = _ONE_BY_ONE
    types = types_of(handlers)

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        apply_in_order(conn, events, _ONE_BY_ONE)


__all__ = ["SessionsProjector", "message_uid"]
