"""The item domains (knowledge sections, session messages, transcript chunks, code symbols), each declared once:
what the projectors, the decay sweep and the recall readers all derive their view of it from.

- its name in the hit-log (RecallServed results' domain, ResultDrilled's), also the recall domain's name;
- the projector that owns its tables, and the decay report's key for its units;
- its units table and their recorded-time versions (`versions`: readmodels/unit_versions.py);
- the key naming a unit: the columns a hit-log handle names (counted by projections/references.py), the ones its
  status-changed event names (applied by projections/unit_status.py) and one decay decision's
  (workers/reference_decay.py); `carried`: the other columns its status-changed event holds (and its stream needs);
- its BM25 postings (readmodels/postings.py: written by projections/postings.py, read by recall/keyword.py) and its
  lazily embedded vectors table (None: keyword only);
- its status-changed event, the unit's stream, the column its idle time counts from and the rows that may decay;
- `held`: which of a key's rows count now (code: a symbol its file still defines).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from domain.code.status import held_sql
from domain.events import (
    CodeSymbolStatusChanged,
    SectionStatusChanged,
    SessionMessageStatusChanged,
    TranscriptChunkStatusChanged,
    chunk_stream,
    message_stream,
    section_stream,
    symbol_stream,
)
from domain.knowledge.handles import handle_section
from domain.transcripts.ids import handle_chunk
from readmodels.postings import Postings
from readmodels.unit_versions import (
    CHUNK_VERSIONS,
    CODE_SYMBOL_VERSIONS,
    MESSAGE_VERSIONS,
    SECTION_VERSIONS,
    UnitVersions,
)

Handle = dict[str, Any]
UNIT_STATUS = "d.status = ANY(:statuses)"  # a recall leg's status filter on a units row (alias d)
# The decay sweep's decision on one unit of each domain.
UnitStatusChanged = (SectionStatusChanged | SessionMessageStatusChanged | TranscriptChunkStatusChanged
                     | CodeSymbolStatusChanged)
KeyOf = Callable[[str, Handle | None], tuple[str, ...] | None]  # (tenant, handle) → the unit's key, or None


@dataclass(frozen=True)
class ItemDomain:
    name: str  # the hit-log domain (and the recall domain) whose results name these units
    projection: str  # the projector owning the tables
    unit: str  # the decay report's key ("sections", "messages", ...)
    versions: UnitVersions  # the units table (versions.units, id column versions.key) and its versions
    key: tuple[tuple[str, str], ...]  # (column, SQL type) naming a unit; its status event's same-named fields
    key_of: KeyOf  # a hit-log handle → its unit's key, in `key`'s order
    carried: tuple[str, ...]  # the unit's other columns its status event holds or its stream needs
    postings: Postings
    vectors: str | None  # (tenant, <id column>, model, embedding), filled lazily; None: keyword only
    status_event: type[UnitStatusChanged]
    stream_of: Callable[[Any], str]  # a units row → the stream its status events go on
    created_column: str  # a unit's idle time counts from the latest of this, its last reference and reactivation
    decays: str = "TRUE"  # SQL on the units table: the rows that may decay at all
    held: Callable[[str], str] | None = None  # (alias) → SQL: the rows a key names that count now

    @property
    def table(self) -> str:
        return self.versions.units

    @property
    def stamps_status_change(self) -> bool:
        """Whether a status change also sets status_changed_at (the units table keeps one: knowledge's)."""
        return "status_changed_at" in self.versions.columns

    @property
    def key_columns(self) -> tuple[str, ...]:
        return tuple(c for c, _ in self.key)


def string_key(*names: str) -> KeyOf:
    """A key read from a handle's string fields `names`, in that order (None when one is missing or no string)."""
    def key_of(tenant: str, handle: Handle | None) -> tuple[str, ...] | None:
        if not isinstance(handle, dict) or not all(isinstance(handle.get(n), str) for n in names):
            return None
        return tuple(handle[n] for n in names)
    return key_of


def uuid_key(unit_of: Callable[[str, Handle | None], uuid.UUID | None]) -> KeyOf:
    """A one-column key: the id `unit_of` (tenant, handle) answers, or None."""
    def key_of(tenant: str, handle: Handle | None) -> tuple[str, ...] | None:
        unit = unit_of(tenant, handle)
        return None if unit is None else (str(unit),)
    return key_of


SECTIONS = ItemDomain(
    "knowledge", "knowledge", "sections", SECTION_VERSIONS, (("section_id", "uuid"),), uuid_key(handle_section),
    ("project", "path", "heading_path", "content_hash"),
    Postings("knowledge_postings", "knowledge_terms", "knowledge_stats", "section_id"),
    "knowledge_section_vectors",
    SectionStatusChanged, lambda r: section_stream(r.section_id), "created_at")
# A message's creation is when the log recorded it sent (sent_at), not its client-given created_at, which may be
# years old for an imported conversation; a pending (unsent) message never decays.
MESSAGES = ItemDomain(
    "sessions", "sessions", "messages", MESSAGE_VERSIONS, (("session_id", "text"), ("message_id", "text")),
    string_key("session_id", "message_id"), ("message_uid",),
    Postings("session_postings", "session_terms", "session_stats", "message_uid"), None,
    SessionMessageStatusChanged, lambda r: message_stream(r.message_uid), "sent_at", decays="sent")
CHUNKS = ItemDomain(
    "transcripts", "transcripts", "chunks", CHUNK_VERSIONS, (("chunk_id", "uuid"),), uuid_key(handle_chunk),
    ("transcript_id", "ord", "content_hash"),
    Postings("transcript_postings", "transcript_terms", "transcript_stats", "chunk_id"),
    "transcript_chunk_vectors",
    TranscriptChunkStatusChanged, lambda r: chunk_stream(r.chunk_id), "created_at")
# A code handle names its symbol by repo, file and qualified name (code_symbols' repo, path, qualified_name): the
# unit is the qualified name in its file, its status carried across the file's versions.
SYMBOLS = ItemDomain(
    "code", "code", "symbols", CODE_SYMBOL_VERSIONS, (("repo", "text"), ("path", "text"), ("qualified_name", "text")),
    string_key("repo", "file", "qualified_name"), (),
    Postings("code_postings", "code_terms", "code_stats", "symbol_id"), None,
    CodeSymbolStatusChanged, lambda r: symbol_stream(r.repo, r.path, r.qualified_name), "created_at", held=held_sql)
ITEM_DOMAINS = (SECTIONS, MESSAGES, CHUNKS, SYMBOLS)

__all__ = ["CHUNKS", "ITEM_DOMAINS", "MESSAGES", "SECTIONS", "SYMBOLS", "UNIT_STATUS", "Handle", "ItemDomain", "KeyOf",
           "UnitStatusChanged", "string_key", "uuid_key"]
