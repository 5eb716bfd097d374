"""The drill into a knowledge section: the exact section a handle names (or the one at a version, or the current
one), whether the current text differs, and one ResultDrilled hit-log event (on its recall's stream when it names
one, else its own): reads read models and the log only; that event is its one write."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine

from domain.errors import NotFound
from domain.events import RecallServed, recall_stream
from domain.knowledge.sections import split_sections
from domain.privacy import PrivacyPolicy, document_excluded
from eventstore.stream import first_of_type
from recall.document_log import document_at, unknown_document
from recall.domains.knowledge import KNOWLEDGE, KnowledgeDomain
from recall.hitlog import append_drilled
from recall.scope import Scope
from recall.timeframe import NOW, TimeFrame


@dataclass(frozen=True)
class Drilled:
    found: dict[str, Any]  # KnowledgeDomain.fetch's answer
    drill_id: uuid.UUID
    position: int


def drill(engine: Engine, tenant: str, path: str, heading_path: str, project: str | None, policy: PrivacyPolicy,
          metadata: dict[str, Any], content_hash: str | None = None, version: int | None = None,
          recall_id: uuid.UUID | None = None, frame: TimeFrame = NOW) -> Drilled:
    """`frame` with as_of: the section and the document as they stood at that position (a section put later is
    unknown, 404)."""
    project = project or None
    unknown = f"no section {heading_path!r} in {path!r}"
    with engine.connect() as conn:
        if recall_id is not None and first_of_type(conn, tenant, recall_stream(recall_id), RecallServed) is None:
            raise NotFound(f"no recall {recall_id}")
        if content_hash is None:
            # No handle: the section at that version of the document (its current one by default), from the log.
            doc = document_at(conn, tenant, path, project, version, frame.as_of)
            if document_excluded(policy, path, doc.tags, project):
                raise NotFound(unknown_document(path, version))  # as document_at answers an unknown one
            content_hash = next((s.content_hash for s in split_sections(doc.content)
                                 if s.heading_path == heading_path), None)
            if content_hash is None:
                raise NotFound(unknown)
        handle = {"path": path, "heading_path": heading_path, "content_hash": content_hash, "project": project}
        found = KnowledgeDomain().fetch(conn, Scope(tenant, project=project), handle, policy, frame)
    if found is None:
        raise NotFound(unknown if version is None else f"{unknown} at version {version}")
    handle["version"] = found["section"]["version"]
    drill_id, position = append_drilled(engine, tenant, KNOWLEDGE, handle, recall_id, metadata)
    return Drilled(found, drill_id, position)
