"""The knowledge library: PUT/GET/DELETE /v1/knowledge/{path}, POST /v1/knowledge/batch, GET /v1/knowledge,
and the drill GET /v1/knowledge-sections."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from engramlog_client.models.common import Request, Response


class DocumentIn(Request):
    content: str
    title: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    project: str | None = None


class BatchDocumentIn(DocumentIn):
    path: str


class DocumentsIn(Request):
    documents: list[BatchDocumentIn]


class DocumentWritten(Response):
    path: str
    project: str | None = None
    version: int
    content_hash: str
    changed: bool  # False: the content was already the current version; nothing was appended
    sections: int
    sections_changed: int
    position: int | None = None


class DocumentsWritten(Response):
    documents: list[DocumentWritten]


class Document(Response):
    path: str
    project: str | None = None
    version: int
    current_version: int
    retired: bool
    content: str
    content_hash: str
    title: str | None = None
    tags: list[str] = []
    metadata: dict[str, Any] = {}


class DocumentListed(Response):
    path: str
    project: str | None = None
    version: int
    content_hash: str
    title: str | None = None
    tags: list[str] = []
    status: str  # active | retired
    sections: int
    updated_at: datetime


class DocumentsList(Response):
    documents: list[DocumentListed]
    next_after: str | None = None  # `after` for the next page; None: this was the last


class Section(Response):
    path: str
    project: str | None = None
    heading_path: str
    ordinal: int
    content_hash: str
    version: int
    text: str  # the exact slice of the document
    title: str | None = None
    tags: list[str] = []
    status: str
    ref_count: int = 0
    last_referenced_at: datetime | None = None


class Drilled(Response):
    """The drill's answer: the section a handle names, and the one now at its place (when it differs)."""

    section: Section
    current: Section | None = None
    current_differs: bool
    drill_id: uuid.UUID
    position: int
