"""Put, retire and batch-put documents of the knowledge library: each a DocumentPut / DocumentRetired event on the
document's own stream, appended at the stream's current version (of two concurrent puts only one wins: 409).

A put whose content, title, tags and metadata equal the document's current version appends nothing and answers
that version. Every check runs before anything is written; a batch is validated whole, then appended in one
transaction (all or nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine

from domain.errors import ContentTooLarge, InvalidPayload, NotFound
from domain.events import (
    DocumentPut,
    DocumentRetired,
    NewEvent,
    document_stream,
    has_lone_surrogate,
    validate_payload,
)
from domain.knowledge.paths import document_size_problem, path_problem
from domain.knowledge.sections import split_sections
from domain.privacy import NO_POLICY, PrivacyPolicy, document_excluded
from domain.text import content_hash, has_nul
from eventstore.append import append
from infra.settings import get_settings
from infra.wake import appended
from recall.document_log import current_document, unknown_document


@dataclass(frozen=True)
class DocumentInput:
    path: str
    content: str
    title: str | None = None
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    project: str | None = None


@dataclass(frozen=True)
class DocumentWritten:
    path: str
    project: str | None
    version: int
    content_hash: str
    changed: bool  # False: the same content was already the current version (nothing appended)
    sections: int
    sections_changed: int  # sections this version holds that the previous current one did not
    position: int | None = None


def _checked(doc: DocumentInput) -> dict[str, Any]:
    """The DocumentPut payload, or the reason it is refused (nothing is written for a refused one)."""
    problem = path_problem(doc.path)
    if problem:
        raise InvalidPayload(f"path {doc.path!r}: {problem}")
    if not isinstance(doc.content, str):
        raise InvalidPayload("content must be text")
    if has_lone_surrogate([doc.content, doc.title, doc.tags, doc.metadata, doc.project]):
        raise InvalidPayload(f"{doc.path}: text must be valid Unicode (a lone surrogate is not)")
    if has_nul([doc.content, doc.title, doc.tags, doc.metadata, doc.project]):
        raise InvalidPayload(f"{doc.path}: text must not contain NUL (\\u0000) characters")
    too_large = document_size_problem(doc.content, get_settings().limits.max_document_bytes)
    if too_large:
        raise ContentTooLarge(f"{doc.path}: {too_large}")
    return validate_payload(DocumentPut, {
        "path": doc.path, "content": doc.content, "content_hash": content_hash(doc.content), "title": doc.title,
        "tags": list(doc.tags), "metadata": doc.metadata, "project": doc.project or None})


_SAME = ("content_hash", "title", "tags", "metadata")


def _changed_sections(before: str | None, after: str) -> tuple[int, int]:
    new = {(s.heading_path, s.content_hash) for s in split_sections(after)}
    old = set() if before is None else {(s.heading_path, s.content_hash) for s in split_sections(before)}
    return len(new), len(new - old)


class _Excluded(Exception):
    """A put of a document the privacy policy excludes (put_documents decides: refused, or skipped in a batch)."""


def _excluded(data: dict[str, Any]) -> DocumentWritten:
    """A batch's answer for an excluded document: nothing written, the same whether the log holds it or not."""
    return DocumentWritten(data["path"], data["project"], 0, data["content_hash"], False, 0, 0)


def _plan(conn: Connection, tenant: str, data: dict[str, Any],
          policy: PrivacyPolicy) -> tuple[NewEvent | None, DocumentWritten]:
    if document_excluded(policy, data["path"], data.get("tags") or (), data["project"]):
        raise _Excluded(data["path"])
    stream = document_stream(data["project"], data["path"])
    cur = current_document(conn, tenant, stream)
    if cur.put is not None and document_excluded(policy, data["path"], cur.put.data.get("tags") or (),
                                                 data["project"]):
        raise _Excluded(data["path"])  # the document as it stands is hidden: its version and hash are not told
    previous = cur.put.data if cur.put is not None and not cur.retired else None
    if previous is not None and all(previous.get(k) == data[k] for k in _SAME):
        n, _ = _changed_sections(None, data["content"])
        return None, DocumentWritten(data["path"], data["project"], cur.head, data["content_hash"], False, n, 0,
                                     cur.put.position if cur.put else None)
    n, changed = _changed_sections(previous["content"] if previous else None, data["content"])
    event = NewEvent(DocumentPut.type_name(), stream, data, expected_version=cur.head)
    return event, DocumentWritten(data["path"], data["project"], cur.head + 1, data["content_hash"], True, n, changed)


def put_documents(engine: Engine, tenant: str, docs: Sequence[DocumentInput], metadata: dict[str, Any],
                  policy: PrivacyPolicy = NO_POLICY, skip_excluded: bool = True) -> list[DocumentWritten]:
    """Put each document (a folder import: all validated first, then one transaction). Answers in input order.
    A document the privacy policy excludes (by the put's path, tags or project, or its current version's tags) is
    not written, and answered the same whether the log holds it or not (its `changed` and version would tell):
    in a batch skipped (version 0, changed false: a folder sync goes on), else a 422."""
    if not docs:
        raise InvalidPayload("a batch needs at least one document")
    limit = get_settings().limits.max_batch
    if len(docs) > limit:
        raise InvalidPayload(f"a batch holds at most {limit} documents, got {len(docs)}")
    payloads = [_checked(d) for d in docs]
    streams = [document_stream(p["project"], p["path"]) for p in payloads]
    if len(set(streams)) != len(streams):
        raise InvalidPayload("a batch names the same document (project, path) twice")
    with engine.begin() as conn:
        plans = []
        for p in payloads:
            try:
                plans.append(_plan(conn, tenant, p, policy))
            except _Excluded:
                if not skip_excluded:
                    raise InvalidPayload(f"document {p['path']!r}: excluded by the tenant's privacy policy "
                                         "(exclude_paths, exclude_tags, exclude_projects); it is not written") from None
                plans.append((None, _excluded(p)))
        events = [e for e, _ in plans if e is not None]
        positions = iter(append(conn, tenant, events, metadata))
    appended(len(events))
    return [w if e is None else DocumentWritten(**{**w.__dict__, "position": next(positions)}) for e, w in plans]


def put_document(engine: Engine, tenant: str, doc: DocumentInput, metadata: dict[str, Any],
                 policy: PrivacyPolicy = NO_POLICY) -> DocumentWritten:
    [done] = put_documents(engine, tenant, [doc], metadata, policy, skip_excluded=False)
    return done


def retire_document(engine: Engine, tenant: str, path: str, project: str | None, metadata: dict[str, Any],
                    reason: str | None = None) -> DocumentWritten:
    """Retire the document (404 when there is none; already retired: nothing appended, answered as it is)."""
    data = validate_payload(DocumentRetired, {"path": path, "project": project or None, "reason": reason})
    stream = document_stream(data["project"], path)
    with engine.begin() as conn:
        cur = current_document(conn, tenant, stream)
        if cur.put is None:
            raise NotFound(unknown_document(path, project=project))
        hash_ = cur.put.data["content_hash"]
        if cur.retired:
            return DocumentWritten(path, data["project"], cur.head, hash_, False, 0, 0)
        [position] = append(conn, tenant, [NewEvent(DocumentRetired.type_name(), stream, data,
                                                    expected_version=cur.head)], metadata)
    appended(1)
    return DocumentWritten(path, data["project"], cur.head + 1, hash_, True, 0, 0, position)
