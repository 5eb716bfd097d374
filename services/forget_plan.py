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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import Connection, text

from domain.events import (
    MEMORIES,
    BlindSpotRegistered,
    CodeFilePut,
    DeepRecallServed,
    DeepRecallStored,
    DocumentPut,
    EventSchema,
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
from readmodels.item_domains import CHUNKS, MESSAGES, SECTIONS, SYMBOLS

_HIT_LOG = [t.type_name() for t in (RecallFeedbackGiven, DeepRecallServed, DeepRecallStored, BlindSpotRegistered)]
_SEALED_HIT_LOG = (RecallServed.type_name(), ResultDrilled.type_name())  # results sealed: searched opened
Row = Any  # a read-model row, its columns by name


@dataclass(frozen=True)
class OwnStreams:
    """One kind of a subject's own streams, described once: what finds them, and what the hit-log names them by
    (its records name a memory or a session by its id, a document by its path, a transcript by its id, a code
    file by its repository)."""

    label: str  # the plan's key (Plan.streams, the receipt's counts)
    put: type[EventSchema]  # the event whose plain fields (never sealed) find its streams by a subject's value
    # SQL on the read models that hold its text (the log's is sealed): the rows whose text names an entity (:word,
    # :name), one for each stream, which `stream_of` reads from the row
    named_in: tuple[str, ...]
    stream_of: Callable[[Row], str]
    # The hit-log names it by its id (`id_stream`: the stream of an id, read backwards from a stream by
    # `id_in`), or by a field of `put` that named_in's rows hold as a column (`named_by`): one of the two.
    id_stream: Callable[[str], str] | None = None
    named_by: str | None = None


def id_in(stream: str, id_stream: Callable[[str], str]) -> str:
    """The id a stream of `id_stream` (an id behind a fixed prefix: memory_stream, session_stream) is named by."""
    return stream.removeprefix(id_stream(""))


def _memory_stream(memory_id: str) -> str:
    return memory_stream(memory_id)  # type: ignore[arg-type]  # validated as a UUID by the route


MEMORY_STREAMS = OwnStreams(
    MEMORIES, MemoryRecorded,
    ("SELECT DISTINCT memory_id FROM memories WHERE tenant = :tenant AND content ~* :word",
     # a memory's earlier texts (before a reinforcement or merge rewrote it) live on in its versions (as_of reads)
     "SELECT DISTINCT memory_id FROM memory_versions WHERE tenant = :tenant AND content ~* :word",
     "SELECT DISTINCT memory_id FROM memory_entities WHERE tenant = :tenant AND lower(entity) = lower(:name)"),
    lambda r: memory_stream(r.memory_id), id_stream=_memory_stream)
SESSION_STREAMS = OwnStreams(
    MESSAGES.name, SessionMessagesAppended,
    (f"SELECT DISTINCT session_id FROM {MESSAGES.table} WHERE tenant = :tenant AND content ~* :word",),
    lambda r: session_stream(r.session_id), id_stream=session_stream)
TRANSCRIPT_STREAMS = OwnStreams(
    CHUNKS.name, TranscriptChunksPut,
    (f"SELECT DISTINCT transcript_id FROM {CHUNKS.table} WHERE tenant = :tenant AND text ~* :word",),
    lambda r: transcript_stream(r.transcript_id), named_by="transcript_id")
DOCUMENT_STREAMS = OwnStreams(  # a section's document_id is its document's stream
    "documents", DocumentPut,
    (f"SELECT DISTINCT document_id, path FROM {SECTIONS.table} WHERE tenant = :tenant AND text ~* :word",),
    lambda r: r.document_id, named_by="path")
CODE_STREAMS = OwnStreams(
    SYMBOLS.name, CodeFilePut,
    ("SELECT DISTINCT repo, path FROM code_files WHERE tenant = :tenant AND content ~* :word",),
    lambda r: code_file_stream(r.repo, r.path), named_by="repo")
OWN_STREAMS = (MEMORY_STREAMS, SESSION_STREAMS, TRANSCRIPT_STREAMS, DOCUMENT_STREAMS, CODE_STREAMS)  # plan order


@dataclass(frozen=True)
class Find:
    """A subject's value finds streams of `kind`: those whose `put` event holds it in `field` (None: the value is
    the stream's own id, kind.id_stream)."""

    kind: OwnStreams
    field: str | None


ENTITY: ForgetKind = "entity"  # searched in every kind's named_in instead
FINDS: dict[ForgetKind, tuple[Find, ...]] = {
    "memory_id": (Find(MEMORY_STREAMS, None),),
    "agent_id": (Find(MEMORY_STREAMS, "agent_id"), Find(SESSION_STREAMS, "agent_id")),
    "session_id": (Find(MEMORY_STREAMS, "session_id"), Find(SESSION_STREAMS, None)),
    "path": (Find(DOCUMENT_STREAMS, "path"),),
    "transcript_id": (Find(TRANSCRIPT_STREAMS, "transcript_id"),),
    "repo": (Find(CODE_STREAMS, "repo"),),
}


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


def _find(conn: Connection, tenant: str, find: Find, value: str, plan: Plan) -> None:
    kind = find.kind
    if find.field is None:
        assert kind.id_stream is not None, kind.label  # a Find by id names a kind with one (tests/unit)
        stream = kind.id_stream(value)
        plan.streams[kind.label] = [stream] if subjects.stream_exists(conn, tenant, stream) else []
        return
    plan.streams[kind.label] = subjects.streams_with(conn, tenant, [kind.put.type_name()], find.field, value)
    if find.field == kind.named_by:
        plan.values.append(value)  # the hit-log names these streams by the value that found them


def _entity(conn: Connection, tenant: str, name: str, plan: Plan) -> None:
    word = r"\m" + re.escape(name).replace(r"\ ", r"\s+") + r"\M"  # the whole name, any spacing, any case
    params = {"tenant": tenant, "word": word, "name": name}
    for kind in OWN_STREAMS:
        rows = [row for sql in kind.named_in for row in conn.execute(text(sql), params)]
        plan.streams[kind.label] = sorted({kind.stream_of(r) for r in rows})
        if kind.named_by is not None:
            plan.values += sorted({str(getattr(r, kind.named_by)) for r in rows})


def resolve(conn: Connection, tenant: str, subject: Subject) -> Plan:
    """The plan of a forget: nothing is changed."""
    plan = Plan(subject)
    if subject.kind == ENTITY:
        _entity(conn, tenant, subject.value, plan)
    else:
        for find in FINDS[subject.kind]:
            _find(conn, tenant, find, subject.value, plan)
    for kind in OWN_STREAMS:  # the kinds the hit-log names by their ids: read from their streams
        if kind.id_stream is not None:
            plan.values += [id_in(s, kind.id_stream) for s in plan.streams.get(kind.label, [])]
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


__all__ = ["ENTITY", "FINDS", "OWN_STREAMS", "Find", "OwnStreams", "Plan", "Subject", "id_in", "resolve"]
