"""A knowledge document as its log stream says (the log is its source of truth): its head, its latest put and
whether it is retired, now or as of a position; a version of it; the answer for one there is none of. The
writers (services/knowledge.py: a put's expected version) and the readers (the drill, GET /v1/knowledge/{path})
read it here, one way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from domain.errors import InvalidPayload, NotFound
from domain.events import DocumentPut, RecordedEvent, document_stream
from domain.knowledge.paths import path_problem
from eventstore.read import Checkpoint
from eventstore.stream import last_event, stream_event, stream_heads


@dataclass(frozen=True)
class DocumentHead:
    head: int  # the stream's version (0: no such document)
    put: RecordedEvent | None  # the latest DocumentPut
    retired: bool


def _last_event(conn: Connection, tenant: str, stream: str) -> RecordedEvent | None:
    head = stream_heads(conn, tenant, [stream], [], Checkpoint(0, 0)).get(stream)
    return None if head is None else stream_event(conn, tenant, stream, head.version)


def current_document(conn: Connection, tenant: str, stream: str, as_of: int | None = None) -> DocumentHead:
    """The document now, or as of a log position (its stream's events up to it)."""
    last = _last_event(conn, tenant, stream) if as_of is None else last_event(conn, tenant, stream, as_of)
    if last is None:
        return DocumentHead(0, None, False)
    if last.is_a(DocumentPut):
        return DocumentHead(last.stream_version, last, False)
    # Retired: the put before it (a retire is only ever appended after a put).
    put = next((e for v in range(last.stream_version - 1, 0, -1)
                if (e := stream_event(conn, tenant, stream, v)) is not None and e.is_a(DocumentPut)), None)
    return DocumentHead(last.stream_version, put, True)


@dataclass(frozen=True)
class DocumentVersion:
    path: str
    project: str | None
    version: int  # the version answered (its DocumentPut's stream version)
    current_version: int  # the document's stream head
    retired: bool  # the document is retired now
    content: str
    content_hash: str
    title: str | None
    tags: list[str]
    metadata: dict[str, Any]


def unknown_document(path: str, version: int | None = None, project: str | None = None) -> str:
    """What a read (`version`) or a retire (`project`) answers for a document there is none of: also what the
    privacy gate answers for an excluded one, so the answer tells nothing of it."""
    return (f"no document at {path!r}" + (f" version {version}" if version is not None else "")
            + (f" in project {project!r}" if project else ""))


def document_at(conn: Connection, tenant: str, path: str, project: str | None,
                version: int | None = None, as_of: int | None = None) -> DocumentVersion:
    """A document as its log says: its current version (the latest put) or the put at `version`; `as_of` a log
    position, as it stood then (current_version and retired as of then; a version put later is unknown). 404
    otherwise."""
    problem = path_problem(path)
    if problem:
        raise InvalidPayload(f"path {path!r}: {problem}")
    stream = document_stream(project or None, path)
    cur = current_document(conn, tenant, stream, as_of)
    event = cur.put if version is None else stream_event(conn, tenant, stream, version)
    if event is None or not event.is_a(DocumentPut) or event.stream_version > cur.head:
        raise NotFound(unknown_document(path, version))
    d = event.data
    return DocumentVersion(path, d.get("project"), event.stream_version, cur.head, cur.retired, d["content"],
                           d["content_hash"], d.get("title"), list(d.get("tags") or []), dict(d.get("metadata") or {}))
