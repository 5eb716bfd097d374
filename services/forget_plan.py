"""What forgetting a subject erases (docs/forget.md): the subject's own streams, and the hit-log streams whose
records name them. Read from the log's plain fields (ids, scope: never sealed), and, for an entity, from the read
models that hold the text (the log's text is sealed, so no SQL can search it).

A subject's unit of erasure is a stream: a memory, a session, a document, a transcript, a code file, a recall. An
entity forget erases every stream whose text names the entity, whole: a message's neighbours speak of the person
as "she", a document's next section goes on about them, so erasing only the sentences that spell the name would
leave what the forget is for.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from sqlalchemy import Connection, text

from domain.events import (
    BlindSpotRegistered,
    CodeFilePut,
    DeepRecallServed,
    DeepRecallStored,
    DocumentPut,
    ForgetKind,
    MemoryRecorded,
    RecallFeedbackGiven,
    RecallServed,
    RecordedEvent,
    ResultDrilled,
    SessionMessagesAppended,
    TranscriptChunksPut,
    code_file_stream,
    memory_stream,
    session_stream,
)
from domain.transcripts.ids import transcript_stream
from eventstore import subjects
from eventstore.codec import FORGOTTEN
from eventstore.query import EventFilter, query_page
from eventstore.read import Checkpoint

_HIT_LOG = [t.type_name() for t in (RecallFeedbackGiven, DeepRecallServed, DeepRecallStored, BlindSpotRegistered)]
_SEALED_HIT_LOG = (RecallServed.type_name(), ResultDrilled.type_name())  # results sealed: searched opened
# Where an entity's name is found: the read models that hold text, each answering the stream of its item.
_NAMED_IN = (
    ("memories", "SELECT DISTINCT 'memory-' || memory_id FROM memories WHERE tenant = :tenant AND content ~* :word"),
    # a memory's earlier texts (before a reinforcement or merge rewrote it) live on in its versions (as_of reads)
    ("memories", "SELECT DISTINCT 'memory-' || memory_id FROM memory_versions WHERE tenant = :tenant"
                 " AND content ~* :word"),
    ("memories", "SELECT DISTINCT 'memory-' || memory_id FROM memory_entities WHERE tenant = :tenant"
                 " AND lower(entity) = lower(:name)"),
    ("sessions", "SELECT DISTINCT 'session-' || session_id FROM session_messages WHERE tenant = :tenant"
                 " AND content ~* :word"),
    ("transcripts", "SELECT DISTINCT transcript_id FROM transcript_chunks WHERE tenant = :tenant AND text ~* :word"),
    ("documents", "SELECT DISTINCT document_id FROM knowledge_sections WHERE tenant = :tenant AND text ~* :word"),
    ("code", "SELECT DISTINCT json_build_array(repo, path)::text FROM code_files WHERE tenant = :tenant"
             " AND content ~* :word"),
)


@dataclass(frozen=True)
class Subject:
    kind: ForgetKind
    value: str


@dataclass
class Plan:
    """What a forget erases: the streams by kind, the hit-log streams naming them, the counts."""

    subject: Subject
    streams: dict[str, list[str]] = field(default_factory=dict)  # kind (memories, sessions, ...) -> stream ids
    dependent: list[str] = field(default_factory=list)  # recall / deep-recall streams that named them
    values: list[str] = field(default_factory=list)  # the ids the hit-log names them by
    sealed_events: int = 0
    unsealed_events: int = 0  # written before the codec: its key cannot erase them (docs/forget.md)
    events: int = 0
    keys: int = 0

    @property
    def own(self) -> list[str]:
        return sorted({s for found in self.streams.values() for s in found})

    @property
    def every_stream(self) -> list[str]:
        return sorted(set(self.own) | set(self.dependent))

    @property
    def found(self) -> bool:
        return bool(self.own)


def _by_field(conn: Connection, tenant: str, types: list[str], field_: str, value: str) -> list[str]:
    return subjects.streams_with(conn, tenant, types, field_, value)


def _entity(conn: Connection, tenant: str, name: str, plan: Plan) -> None:
    word = r"\m" + re.escape(name).replace(r"\ ", r"\s+") + r"\M"  # the whole name, any spacing, any case
    for kind, sql in _NAMED_IN:
        found = [str(v) for v in conn.execute(text(sql), {"tenant": tenant, "word": word, "name": name}).scalars()]
        if kind == "transcripts":
            plan.values += found
            found = [transcript_stream(t) for t in found]
        elif kind == "code":
            pairs = [json.loads(f) for f in found]
            plan.values += sorted({repo for repo, _ in pairs})
            found = [code_file_stream(repo, path) for repo, path in pairs]
        elif kind == "documents":
            plan.values += list(conn.execute(text(
                "SELECT DISTINCT path FROM knowledge_documents WHERE tenant = :tenant AND document_id = ANY(:ids)"),
                {"tenant": tenant, "ids": found}).scalars())
        plan.streams[kind] = sorted(set(plan.streams.get(kind, [])) | set(found))


def resolve(conn: Connection, tenant: str, subject: Subject) -> Plan:
    """The plan of a forget: nothing is changed."""
    plan = Plan(subject)
    kind, value = subject.kind, subject.value
    recorded, sessions = [MemoryRecorded.type_name()], [SessionMessagesAppended.type_name()]
    if kind == "memory_id":
        stream = memory_stream(value)  # type: ignore[arg-type]  # validated as a UUID by the route
        if subjects.stream_exists(conn, tenant, stream):
            plan.streams["memories"] = [stream]
    elif kind == "agent_id":
        plan.streams["memories"] = _by_field(conn, tenant, recorded, "agent_id", value)
        plan.streams["sessions"] = _by_field(conn, tenant, sessions, "agent_id", value)
    elif kind == "session_id":
        plan.streams["memories"] = _by_field(conn, tenant, recorded, "session_id", value)
        stream = session_stream(value)
        plan.streams["sessions"] = [stream] if subjects.stream_exists(conn, tenant, stream) else []
    elif kind == "path":
        plan.streams["documents"] = _by_field(conn, tenant, [DocumentPut.type_name()], "path", value)
        plan.values.append(value)
    elif kind == "transcript_id":
        plan.streams["transcripts"] = _by_field(conn, tenant, [TranscriptChunksPut.type_name()], "transcript_id",
                                                value)
        plan.values.append(value)
    elif kind == "repo":
        plan.streams["code"] = _by_field(conn, tenant, [CodeFilePut.type_name()], "repo", value)
        plan.values.append(value)
    elif kind == "entity":
        _entity(conn, tenant, value, plan)
    for stream in plan.streams.get("memories", []):
        plan.values.append(stream.removeprefix("memory-"))
    for stream in plan.streams.get("sessions", []):
        plan.values.append(stream.removeprefix("session-"))
    if plan.found:
        _dependents(conn, tenant, plan)
        _count(conn, tenant, plan)
    return plan


def _dependents(conn: Connection, tenant: str, plan: Plan) -> None:
    """The hit-log streams whose records name the subject's ids: recalls and drills (their results are sealed, so
    each is opened and searched), feedback, deep recalls and their stores; then the deep recalls naming those."""
    values, seen = sorted(set(plan.values)), set(plan.own)
    patterns = [json.dumps(v, ensure_ascii=False) for v in values]
    found = {e.stream_id: e.data.get("recall_id") for e in _opened_hit_log(conn, tenant)
             if e.stream_id not in seen and any(p in json.dumps(e.data, ensure_ascii=False) for p in patterns)}
    for _ in range(2):
        found.update({s: r for s, r in subjects.streams_naming(conn, tenant, _HIT_LOG, values).items()
                      if s not in seen})
        fresh = {s: r for s, r in found.items() if s not in seen}
        seen |= fresh.keys()
        plan.dependent += list(fresh)
        values = sorted({str(r) for r in fresh.values() if r})
        found = {}
    plan.dependent = sorted(set(plan.dependent))


def _opened_hit_log(conn: Connection, tenant: str) -> Iterator[RecordedEvent]:
    """The tenant's recall and drill records, opened (eventstore/codec.py), page by page."""
    f = EventFilter(tenant, types=_SEALED_HIT_LOG)
    while True:
        page, more = query_page(conn, f, limit=1000)
        yield from (e for e in page if e.type != FORGOTTEN)
        if not more or not page:
            return
        f = replace(f, after_cursor=Checkpoint(page[-1].tx_id, page[-1].position))


def _count(conn: Connection, tenant: str, plan: Plan) -> None:
    streams = plan.every_stream
    counts = subjects.seal_counts(conn, tenant, streams)
    plan.sealed_events, plan.unsealed_events, plan.events = counts.sealed, counts.unsealed, counts.events
    plan.keys = subjects.count_keys(conn, tenant, streams)


__all__ = ["Plan", "Subject", "resolve"]
