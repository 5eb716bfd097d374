"""Transcripts as the read model has them (GET /v1/transcripts: what `engramlog transcripts sync` compares its
files' content hashes with)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, text

from domain.privacy import PrivacyPolicy, transcript_excluded
from recall.visible_pages import visible_page

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
    def read(cursor: str, n: int) -> list[Any]:
        return list(conn.execute(_LIST, {"tenant": tenant, "after": cursor, "limit": n}).all())

    rows, next_after = visible_page(read, lambda r: r.transcript_id,
                                    lambda r: not transcript_excluded(policy, r.transcript_id),
                                    after, min(limit, MAX_LISTED))
    return [dict(r._mapping) for r in rows], next_after


__all__ = ["list_transcripts"]
