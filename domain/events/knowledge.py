"""The knowledge library's events: a document put at a path (each version's content), retired, and the lifecycle
of its sections.

Stream: doc-<uuid5 of (project, path)> per document (document_stream); a put is appended at the stream's
current version, so of two concurrent puts only one wins. A document's version is the stream version of its
DocumentPut. Section lifecycle decisions go on section-<section_id>.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from domain.events.base import MAX_REASON_CHARS, MAX_TAGS, EventSchema, ScopeText, SystemEvent, Tag, check_metadata
from domain.knowledge.paths import MAX_TITLE_CHARS, check_path
from domain.text import content_hash

SectionStatus = Literal["active", "dormant", "archived", "replaced", "retired"]
_NAMESPACE = uuid.UUID("5f0c7d3e-8a61-4b8e-9a52-1b0f1c7e2d44")  # engramlog knowledge library


class DocumentPut(EventSchema):
    """A producer put a document's content at a path (a new version). Stream: document_stream(project, path)."""

    path: str
    content: str
    content_hash: str  # sha256 of content, checked
    project: ScopeText | None = None
    title: str | None = Field(default=None, max_length=MAX_TITLE_CHARS)
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)
    metadata: dict[str, Any] = Field(default_factory=dict)

    _path = field_validator("path")(check_path)
    _metadata = field_validator("metadata")(check_metadata)

    @model_validator(mode="after")
    def _hash_matches(self) -> DocumentPut:
        if content_hash(self.content) != self.content_hash:
            raise ValueError("content_hash is not the sha256 of content")
        return self


class DocumentRetired(EventSchema):
    """A producer retired a document: its sections are recalled no more (only as history)."""

    path: str
    project: ScopeText | None = None
    reason: str | None = Field(default=None, max_length=MAX_REASON_CHARS)

    _path = field_validator("path")(check_path)


class SectionStatusChanged(SystemEvent):
    """System decision taken with a clock (decay of unreferenced sections): replays reproduce it exactly."""

    section_id: uuid.UUID
    path: str
    project: ScopeText | None = None
    heading_path: str
    content_hash: str
    from_status: SectionStatus
    to_status: SectionStatus
    reason: str
    clock: datetime
    inputs: dict[str, Any] = Field(default_factory=dict)


def document_stream(project: str | None, path: str) -> str:
    return f"doc-{uuid.uuid5(_NAMESPACE, (project or '') + chr(0) + path)}"


def section_id(tenant: str, project: str | None, path: str, heading_path: str, hash_: str) -> uuid.UUID:
    """A section's id: one per (document, heading path, content), so re-putting unchanged text names the same
    section, and a section whose text changed is a new one (the fusion function keys candidates by it)."""
    return uuid.uuid5(_NAMESPACE, "\x00".join((tenant, project or "", path, heading_path, hash_)))


def section_stream(section: uuid.UUID) -> str:
    return f"section-{section}"


def own_document_stream(type_name: str, data: dict[str, Any]) -> str | None:
    """The stream a DocumentPut or DocumentRetired (validated `data`) belongs on; None for other types."""
    if type_name in (DocumentPut.type_name(), DocumentRetired.type_name()):
        return document_stream(data.get("project"), data["path"])
    return None


__all__ = ["DocumentPut", "DocumentRetired", "SectionStatus", "SectionStatusChanged", "document_stream",
           "own_document_stream", "section_id", "section_stream"]
