"""The event export's privacy gate (GET /v1/events for non-operator keys): each content-bearing event type is
decided by the same item identity as the domain that serves it (domain/privacy.py's one rule per domain), with
what that identity needs from the log beyond the event's own data (a document's current tags, a session's agent
and project, a search's results), read once per page.

- memories: a MemoryRecorded by its own recording; every event naming a memory (decisions, edges, merges,
  feedback, the recalls that returned it) by that memory's recording (recall/memory_privacy.py hidden_memories)
- documents and sections: the document's path, project and current tags (a put also by its own tags)
- session messages: the session's id, agent and project
- transcripts: the transcript's id;  code files and symbols: `<repo>/<path>`
- recall records (RecallServed), drills: their scope, and each result by its domain's handle
- deep recalls (DeepRecallServed): the scope, the quick recall's results, every search's results (its
  RecallServed, so a live call's result carried as a capped string is decided by what it held), the sessions it
  read (load_transcript, list_sessions, the bootstrap snapshot's); a cached one as the deep recall it repeats;
  DeepRecallStored and BlindSpotRegistered by their scope and their deep recall.
A deep recall served under a policy that excluded at least what the policy in force excludes now holds nothing it
hides (its answer and printed output were written from what that policy let through) and is shown as is.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection

from domain.events import (
    PRIVACY_STREAM,
    BlindSpotRegistered,
    CodeFilePut,
    CodeFileRemoved,
    CodeSymbolStatusChanged,
    DeepRecallServed,
    DeepRecallStored,
    DocumentPut,
    DocumentRetired,
    EventSchema,
    MemoryRecorded,
    PrivacyPolicySet,
    RecallServed,
    RecordedEvent,
    ResultDrilled,
    SectionStatusChanged,
    SessionMessagesAppended,
    SessionMessageSent,
    SessionMessageStatusChanged,
    TranscriptChunksPut,
    TranscriptChunkStatusChanged,
    document_stream,
    recall_stream,
    session_stream,
)
from domain.privacy import (
    PrivacyPolicy,
    code_file_excluded,
    document_excluded,
    loosened_or_same,
    memory_excluded,
    scope_excluded,
    session_excluded,
    transcript_excluded,
)
from eventstore.stream import first_of_type, read_stream
from readmodels.item_domains import CHUNKS, MESSAGES, SECTIONS, SYMBOLS
from recall.memory_privacy import hidden_memories

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_SESSION_ID = re.compile(r'"session_id":\s*"((?:[^"\\]|\\.)*)"')


@dataclass
class Gate:
    """One page's decisions under one policy: the log lookups each identity needs, each read once."""

    conn: Connection
    tenant: str
    policy: PrivacyPolicy
    hidden: set[str]  # the page's named memories the policy excludes (lower-case ids)
    _documents: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    _sessions: dict[str, tuple[str | None, str | None] | None] = field(default_factory=dict)
    _decided: dict[str, bool] = field(default_factory=dict)
    _policies: list[tuple[int, PrivacyPolicy]] | None = None

    def decides(self, event: RecordedEvent) -> bool:
        """Whether the event's type has an item identity of its own here (HIDDEN_BY)."""
        return event.type in _BY_NAME

    # -- the lookups --------------------------------------------------------------------------------------------
    def document(self, project: str | None, path: str) -> dict[str, Any] | None:
        """The document's latest put (its current identity: path, project, tags), None when never put."""
        stream = document_stream(project, path)
        if stream not in self._documents:
            puts = read_stream(self.conn, self.tenant, stream, (DocumentPut,))
            self._documents[stream] = puts[-1].data if puts else None
        return self._documents[stream]

    def session(self, session_id: str) -> tuple[str | None, str | None] | None:
        """A session's agent and project (its first append's, as the sessions read model keeps them)."""
        if session_id not in self._sessions:
            first = first_of_type(self.conn, self.tenant, session_stream(session_id), SessionMessagesAppended)
            self._sessions[session_id] = None if first is None else (first.data.get("agent_id"),
                                                                     first.data.get("project"))
        return self._sessions[session_id]

    def policy_at(self, position: int) -> PrivacyPolicy:
        """The policy in force when the event at `position` was appended."""
        if self._policies is None:
            self._policies = [(e.position, PrivacyPolicy.of(e.data))
                              for e in read_stream(self.conn, self.tenant, PRIVACY_STREAM, (PrivacyPolicySet,))]
        then = PrivacyPolicy()
        for at, policy in self._policies:
            if at < position:
                then = policy
        return then

    # -- the items ----------------------------------------------------------------------------------------------
    def document_hidden(self, path: Any, project: Any, tags: Any = ()) -> bool:
        if not isinstance(path, str):
            return False
        project = project if isinstance(project, str) else None
        current = self.document(project, path) or {}
        own_tags = tags if isinstance(tags, list) else []
        return (document_excluded(self.policy, path, own_tags, project)
                or document_excluded(self.policy, path, current.get("tags") or (), project))

    def session_hidden(self, session_id: Any, agent_id: Any = None, project: Any = None) -> bool:
        if not isinstance(session_id, str):
            return False
        known = self.session(session_id) or (None, None)
        return any(session_excluded(self.policy, session_id, a if isinstance(a, str) else None,
                                    p if isinstance(p, str) else None)
                   for a, p in (known, (agent_id, project)))

    def result_hidden(self, domain: Any, handle: Any, memory_id: Any = None) -> bool:
        """One result of a recall (or a drill), by its domain's identity."""
        handle = handle if isinstance(handle, dict) else {}
        memory = memory_id or handle.get("memory_id")
        if memory is not None:
            return str(memory).lower() in self.hidden or self._unknown_memory_hidden(memory)
        if domain == SECTIONS.name:
            return self.document_hidden(handle.get("path"), handle.get("project"))
        if domain == MESSAGES.name:
            return self.session_hidden(handle.get("session_id"))
        if domain == CHUNKS.name:
            return isinstance(handle.get("transcript_id"), str) and transcript_excluded(self.policy,
                                                                                        handle["transcript_id"])
        if domain == SYMBOLS.name:
            return (isinstance(handle.get("repo"), str) and isinstance(handle.get("file"), str)
                    and code_file_excluded(self.policy, handle["repo"], handle["file"]))
        return names_excluded(self.policy, handle)

    def decide_memories(self, ids: Iterable[Any]) -> None:
        """Decide many memories in one read (a report over many recalls), so result_hidden reads none again."""
        keys: set[str] = set()
        for memory in ids:
            try:
                keys.add(str(uuid.UUID(str(memory))))
            except ValueError:
                continue
        keys -= self._decided.keys()
        hidden = hidden_memories(self.conn, self.tenant, self.policy, keys) if keys else set()
        self.hidden |= hidden
        self._decided.update({k: k in hidden for k in keys})

    def _unknown_memory_hidden(self, memory: Any) -> bool:
        try:
            key = str(uuid.UUID(str(memory)))
        except ValueError:
            return False
        if key not in self._decided:  # memories outside the page's named ids (a search's results): read once
            self._decided[key] = bool(hidden_memories(self.conn, self.tenant, self.policy, [key]))
        return self._decided[key]

    def recall_hidden(self, recall_id: Any, deep: bool = False) -> bool:
        """Whether a recall's RecallServed (a deep recall's search) answered anything the policy hides; `deep`: whether
        a deep recall's audit, its DeepRecallServed, is hidden (what its store() values and blind spots follow)."""
        schema, decide = (DeepRecallServed, deep_recall_served) if deep else (RecallServed, recall_served)
        key = f"{schema.type_name()}:{recall_id}"
        if key not in self._decided:
            try:
                stream = recall_stream(uuid.UUID(str(recall_id)))
            except ValueError:
                return False
            served = read_stream(self.conn, self.tenant, stream, (schema,))
            self._decided[key] = any(decide(self, e.data, e.position) for e in served)
        return self._decided[key]


# -- one function per content-bearing event type: (gate, data, position) -> hidden ---------------------------------
def memory_recorded(g: Gate, data: dict[str, Any], _: int) -> bool:
    return memory_excluded(g.policy, data)


def document_event(g: Gate, data: dict[str, Any], _: int) -> bool:
    return g.document_hidden(data.get("path"), data.get("project"), data.get("tags"))


def session_event(g: Gate, data: dict[str, Any], _: int) -> bool:
    return g.session_hidden(data.get("session_id"), data.get("agent_id"), data.get("project"))


def transcript_event(g: Gate, data: dict[str, Any], _: int) -> bool:
    return isinstance(data.get("transcript_id"), str) and transcript_excluded(g.policy, data["transcript_id"])


def code_event(g: Gate, data: dict[str, Any], _: int) -> bool:
    return (isinstance(data.get("repo"), str) and isinstance(data.get("path"), str)
            and code_file_excluded(g.policy, data["repo"], data["path"]))


def recall_served(g: Gate, data: dict[str, Any], _: int = 0) -> bool:
    return scope_excluded(g.policy, data.get("scope") or {}) or any(
        g.result_hidden(r.get("domain", "memories"), r.get("handle"), r.get("memory_id"))
        for r in data.get("results") or [] if isinstance(r, dict))


def result_drilled(g: Gate, data: dict[str, Any], _: int) -> bool:
    return g.result_hidden(data.get("domain"), data.get("handle"))


def _live_calls(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every live call of a deep recall's iterations, nested loops' included."""
    for record in json_objects(data.get("iterations") or []):
        if isinstance(record.get("fn"), str):
            yield record


def _sessions_named(result: Any) -> list[str]:
    """The session ids a live call's result names (it is kept as a capped string: parsed, else scanned)."""
    if not isinstance(result, str):
        return [r["session_id"] for r in json_objects(result) if isinstance(r.get("session_id"), str)]
    try:
        return _sessions_named(json.loads(result))
    except ValueError:
        return [json.loads(f'"{m}"') for m in _SESSION_ID.findall(result)]


def deep_recall_served(g: Gate, data: dict[str, Any], position: int) -> bool:
    if scope_excluded(g.policy, data.get("scope") or {}):
        return True
    if any(g.result_hidden(r.get("domain", "memories"), r.get("handle"), r.get("memory_id"))
           for r in data.get("shortcut_results") or [] if isinstance(r, dict)):
        return True
    if data.get("cached"):
        # A cached answer is its source deep recall's (named in the reason, deep_recall/service.py): decided as it.
        source = {m.lower() for m in _UUID.findall(str(data.get("reason") or ""))} - {str(data.get("recall_id"))}
        return any(g.recall_hidden(s, deep=True) for s in sorted(source))
    if position and loosened_or_same(g.policy, g.policy_at(position)):
        return False  # served under a policy hiding at least as much: it holds nothing hidden now
    searches = set(map(str, data.get("search_recall_ids") or []))
    sessions = set(data.get("bootstrap_sessions") or [])
    for call in _live_calls(data):
        if call.get("recall_id"):
            searches.add(str(call["recall_id"]))
        args = a if isinstance(a := call.get("args"), dict) else {}
        if isinstance(args.get("session_id"), str):
            sessions.add(args["session_id"])
        if call["fn"] == "list_sessions":
            sessions.update(_sessions_named(call.get("result")))
        if scope_excluded(g.policy, args):
            return True
    return any(g.session_hidden(s) for s in sessions) or any(g.recall_hidden(r) for r in sorted(searches))


def deep_recall_stored(g: Gate, data: dict[str, Any], _: int) -> bool:
    return (scope_excluded(g.policy, data) or names_excluded(g.policy, {"value": data.get("value")})
            or g.recall_hidden(data.get("recall_id"), deep=True))


def blind_spot(g: Gate, data: dict[str, Any], _: int) -> bool:
    return scope_excluded(g.policy, data)


HIDDEN_BY: dict[type[EventSchema], Callable[[Gate, dict[str, Any], int], bool]] = {
    MemoryRecorded: memory_recorded,
    DocumentPut: document_event, DocumentRetired: document_event, SectionStatusChanged: document_event,
    SessionMessagesAppended: session_event, SessionMessageSent: session_event,
    SessionMessageStatusChanged: session_event,
    TranscriptChunksPut: transcript_event, TranscriptChunkStatusChanged: transcript_event,
    CodeFilePut: code_event, CodeFileRemoved: code_event, CodeSymbolStatusChanged: code_event,
    RecallServed: recall_served, ResultDrilled: result_drilled,
    DeepRecallServed: deep_recall_served, DeepRecallStored: deep_recall_stored, BlindSpotRegistered: blind_spot,
}
_BY_NAME = {schema.type_name(): fn for schema, fn in HIDDEN_BY.items()}


def event_hidden(g: Gate, event: RecordedEvent) -> bool:
    """Whether the event shows an item the policy hides, by its own type's identity (types without content of
    their own, a memory's decisions: by the memories they name, decided by the caller)."""
    fn = _BY_NAME.get(event.type)
    return fn is not None and fn(g, event.data, event.position)


def json_objects(value: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object in a value, the value itself included."""
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from json_objects(v)
    elif isinstance(value, list):
        for v in value:
            yield from json_objects(v)


def names_excluded(policy: PrivacyPolicy, data: Any) -> bool:
    """For data with no domain of its own (a value a deep recall stored): any object in it holding an excluded
    item's fields (path, tags, agent_id, project, session_id, a transcript id)."""
    for record in json_objects(data):
        tags = record.get("tags")
        fields: dict[str, Any] = {"tags": tags if isinstance(tags, list) else ()}
        for key in ("path", "agent_id", "project", "session_id"):
            if isinstance(record.get(key), str):
                fields[key] = record[key]
        if isinstance(record.get("transcript_id"), str) and "session_id" not in fields:
            fields["session_id"] = record["transcript_id"]
        if isinstance(record.get("repo"), str) and isinstance(record.get("file"), str):
            fields["path"] = f"{record['repo']}/{record['file']}"
        if policy.excludes_record(fields):
            return True
    return False


__all__ = ["HIDDEN_BY", "Gate", "deep_recall_served", "deep_recall_stored", "event_hidden", "json_objects",
           "names_excluded"]
