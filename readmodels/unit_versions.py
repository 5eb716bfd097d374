"""Recorded-time versions of the units the hybrid domains recall (knowledge sections, transcript chunks, session
messages: migration 0029; code symbols: 0030), so a recall or a drill `as_of` a log position answers what the
store held then (recall/timeframe.py) without replaying the log.

A unit's text never changes (its id is derived from it); what changes is its lifecycle: a status (active,
dormant, archived, replaced, retired), and per domain a few more columns (a section's document version and place;
a chunk's version and line and turn ranges, which move when an earlier chunk grows; a message's sent mark).
`UnitVersions` names a units table, its versions table and those columns, once. After an event changed units, its
projector calls `snapshot` with the event's position and the units it may have changed: each whose versioned
columns differ from its open version gets that version closed at the position and a new one opened from it. A
unit that did not exist before the position has no version covering it, so a read as of then leaves it out.
Applied per event in log order, so a rebuild gives the same rows (verify compares them).

Reference counts are not versioned: they feed the decay decisions, whose outcome (the status) is.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, text


@dataclass(frozen=True)
class UnitVersions:
    units: str  # the read model's table, one row per unit
    versions: str  # (tenant, key, valid_from, valid_to, *versioned)
    key: str  # the unit's id column
    versioned: tuple[str, ...]  # the columns whose change opens a version
    fixed: tuple[str, ...]  # every other column of `units` (a read as of takes them from the unit's row)

    def snapshot(self, conn: Connection, tenant: str, position: int, where: str,
                 params: dict[str, object]) -> None:
        """A version from `position` for each unit of `tenant` that `where` (SQL on alias u, binding `params`)
        selects and whose versioned columns differ from its open version (or that has none)."""
        cols = ", ".join(self.versioned)
        changed = " OR ".join(f"v.{c} IS DISTINCT FROM u.{c}" for c in self.versioned)
        conn.execute(text(f"""
        WITH changed AS (
            SELECT u.{self.key}, {", ".join(f"u.{c}" for c in self.versioned)}
            FROM {self.units} u
            LEFT JOIN {self.versions} v ON v.tenant = u.tenant AND v.{self.key} = u.{self.key} AND v.valid_to IS NULL
            WHERE u.tenant = :tenant AND ({where}) AND (v.{self.key} IS NULL OR {changed})
        ), closed AS (
            UPDATE {self.versions} v SET valid_to = :position FROM changed c
            WHERE v.tenant = :tenant AND v.{self.key} = c.{self.key} AND v.valid_to IS NULL
        )
        INSERT INTO {self.versions} (tenant, {self.key}, valid_from, {cols})
        SELECT :tenant, {self.key}, :position, {cols} FROM changed
        """), {**params, "tenant": tenant, "position": position})

    def as_of(self) -> str:
        """The units as they stood at :tf_as_of, as a relation with the units table's columns (alias it): each
        unit with a version covering that position, its versioned columns from that version."""
        fixed = ", ".join(f"u.{c}" for c in ("tenant", self.key, *self.fixed))
        versioned = ", ".join(f"v.{c}" for c in self.versioned)
        return (f"(SELECT {fixed}, {versioned} FROM {self.units} u JOIN {self.versions} v"
                f" ON v.tenant = u.tenant AND v.{self.key} = u.{self.key}"
                " AND v.valid_from <= :tf_as_of AND (v.valid_to IS NULL OR v.valid_to > :tf_as_of))")

    def status_as_of(self, alias: str = "d", also: str = "") -> str:
        """SQL on `alias` (a units row): the unit had a version at :tf_as_of whose status is one of :statuses (and,
        given, `also`: SQL on that version, alias x). A recall leg's status filter as of a position."""
        return (f"EXISTS (SELECT 1 FROM {self.versions} x WHERE x.tenant = {alias}.tenant"
                f" AND x.{self.key} = {alias}.{self.key} AND x.valid_from <= :tf_as_of"
                f" AND (x.valid_to IS NULL OR x.valid_to > :tf_as_of) AND x.status = ANY(:statuses){also})")

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column of the units table (what a test checks against the database)."""
        return ("tenant", self.key, *self.fixed, *self.versioned)


SECTION_VERSIONS = UnitVersions(
    "knowledge_sections", "knowledge_section_versions", "section_id", ("status", "version", "ordinal", "title", "tags"),
    ("document_id", "project", "path", "heading_path", "content_hash", "first_version", "text", "length",
     "ref_count", "last_referenced_at", "status_ref_count", "created_at", "status_changed_at", "last_reactivated_at"))
CHUNK_VERSIONS = UnitVersions(
    "transcript_chunks", "transcript_chunk_versions", "chunk_id",
    ("status", "version", "first_line", "last_line", "first_turn", "last_turn"),
    ("transcript_id", "ord", "content_hash", "first_version", "text", "length", "started_at", "ended_at",
     "ref_count", "last_referenced_at", "created_at", "status_ref_count", "last_reactivated_at"))
MESSAGE_VERSIONS = UnitVersions(
    "session_messages", "session_message_versions", "message_uid", ("status", "sent"),
    ("session_id", "seq", "message_id", "role", "content", "tool_name", "name", "tool_call_id", "tool_calls",
     "created_at", "checkpoint", "agent_id", "project", "metadata", "length", "distinct_terms", "position",
     "sent_at", "ref_count", "last_referenced_at", "status_ref_count", "last_reactivated_at"))
# A symbol's row never changes but for its lifecycle (its id is derived from its file's content and its place):
# only its status is versioned, 'replaced' or 'removed' once its file drops it (migration 0030).
CODE_SYMBOL_VERSIONS = UnitVersions(
    "code_symbols", "code_symbol_versions", "symbol_id", ("status",),
    ("repo", "path", "ordinal", "qualified_name", "name", "kind", "parent", "signature", "doc", "start_line",
     "end_line", "content_hash", "length", "ref_count", "last_referenced_at", "created_at", "status_ref_count",
     "last_reactivated_at"))
UNIT_VERSIONS = (SECTION_VERSIONS, CHUNK_VERSIONS, MESSAGE_VERSIONS, CODE_SYMBOL_VERSIONS)

__all__ = ["CHUNK_VERSIONS", "CODE_SYMBOL_VERSIONS", "MESSAGE_VERSIONS", "SECTION_VERSIONS", "UNIT_VERSIONS",
           "UnitVersions"]
