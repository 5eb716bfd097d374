"""HTTP bodies of the knowledge library (api/routes/knowledge.py)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

from annotated_types import Ge, Le, MaxLen
from pydantic import BaseModel, Field, field_validator

from api.schemas import Body
from domain.events import MAX_TAGS, ScopeText, Tag, check_metadata
from domain.knowledge.paths import MAX_PATH_CHARS, MAX_TITLE_CHARS

# The drill's query (GET /v1/knowledge-sections), and the MCP get_section tool's inputs derived from it.
DrillPath = Annotated[str, MaxLen(512)]
HeadingPath = Annotated[str, MaxLen(4096)]
ContentHash = Annotated[str, MaxLen(64)] | None
SectionVersion = Annotated[int, Ge(1), Le(2**31 - 1)] | None


class DocumentIn(Body):
    """PUT /v1/knowledge/{path} as JSON (a text/markdown or text/plain body is the content itself)."""

    content: str
    title: str | None = Field(default=None, max_length=MAX_TITLE_CHARS)
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)
    metadata: dict[str, Any] = Field(default_factory=dict)
    project: ScopeText | None = None

    _metadata = field_validator("metadata")(check_metadata)


class BatchDocumentIn(DocumentIn):
    path: str = Field(max_length=MAX_PATH_CHARS)


class DocumentsIn(Body):
    documents: list[BatchDocumentIn] = Field(min_length=1)


class DocumentWrittenOut(BaseModel):
    path: str
    project: str | None
    version: int
    content_hash: str
    changed: bool  # False: the content was already the current version; nothing was appended
    sections: int
    sections_changed: int
    position: int | None


class DocumentsWrittenOut(BaseModel):
    documents: list[DocumentWrittenOut]


class DocumentOut(BaseModel):
    path: str
    project: str | None
    version: int
    current_version: int
    retired: bool
    content: str
    content_hash: str
    title: str | None
    tags: list[str]
    metadata: dict[str, Any]


class DocumentListedOut(BaseModel):
    path: str
    project: str | None
    version: int
    content_hash: str
    title: str | None
    tags: list[str]
    status: str  # active | retired
    sections: int
    updated_at: datetime


class DocumentsListOut(BaseModel):
    documents: list[DocumentListedOut]
    next_after: str | None  # ?after= for the next page; None: this was the last


class SectionOut(BaseModel):
    path: str
    project: str | None
    heading_path: str
    ordinal: int
    content_hash: str
    version: int
    text: str  # the exact slice of the document
    title: str | None
    tags: list[str]
    status: str
    ref_count: int
    last_referenced_at: datetime | None


class DrillOut(BaseModel):
    section: SectionOut
    current: SectionOut | None  # the section now at its (document, heading path); None: gone
    current_differs: bool
    drill_id: uuid.UUID
    position: int
