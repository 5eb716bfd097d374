"""The library's documents as the read model has them (GET /v1/knowledge: what `engramlog knowledge sync` compares
its files' content hashes with)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, text

from domain.privacy import PrivacyPolicy, document_excluded
from recall.visible_pages import visible_page

MAX_LISTED = 10_000
_LIST = text("""
SELECT path, project, version, content_hash, title, tags, status, sections, updated_at FROM knowledge_documents
WHERE tenant = :tenant AND project IS NOT DISTINCT FROM :project
  AND (CAST(:prefix AS text) IS NULL OR starts_with(path, :prefix)) AND path > :after
ORDER BY path LIMIT :limit
""")


def list_documents(conn: Connection, tenant: str, project: str | None, policy: PrivacyPolicy,
                   prefix: str | None = None, after: str = "",
                   limit: int = 1000) -> tuple[list[dict[str, Any]], str | None]:
    """The project's documents (none: those without a project) by path, after `after`, none the policy hides; and
    the path to page on from (None: no more)."""
    def read(cursor: str, n: int) -> list[Any]:
        return list(conn.execute(_LIST, {"tenant": tenant, "project": project or None, "prefix": prefix,
                                         "after": cursor, "limit": n}).all())

    rows, next_after = visible_page(read, lambda r: r.path,
                                    lambda r: not document_excluded(policy, r.path, r.tags or (), r.project),
                                    after, min(limit, MAX_LISTED))
    return [dict(r._mapping) | {"tags": list(r.tags or [])} for r in rows], next_after
