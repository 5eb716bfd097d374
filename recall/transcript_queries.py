"""Transcripts as the read model has them (GET /v1/transcripts: what `engramlog transcripts sync` compares its
files' content hashes with)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, text

from domain.privacy import PrivacyPolicy

MAX_LISTED = 10_000
_LIST = text("""
SELECT transcript_id, version, content_hash, format, chunks, lines, turns, bytes, started_at, ended_at, updated_at
FROM transcripts WHERE tenant = :tenant AND transcript_id > :after
ORDER BY transcript_id LIMIT :limit
""")


def list_transcripts(conn: Connection, tenant: str, policy: PrivacyPolicy, after: str = "",
                     limit: int = 1000) -> tuple[list[dict[str, Any]], str | None]:
    """The tenant's transcripts by id, after `after`, none the policy hides; and the id to page on from (None: no
    more)."""
    limit = min(limit, MAX_LISTED)
    rows = conn.execute(_LIST, {"tenant": tenant, "after": after, "limit": limit}).all()
    out = [dict(r._mapping) for r in rows if not policy.excludes(session_id=r.transcript_id)]
    return out, (rows[-1].transcript_id if len(rows) == limit else None)


__all__ = ["list_transcripts"]
