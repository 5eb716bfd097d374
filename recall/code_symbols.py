"""Reading the code read models: a symbol's answer (its definition as the exact slice of its file, its 1-hop
callers, and on request its callees), symbol rows by id or qualified name, and a repository's file list.

Every answer passes the privacy gate with the path `<repo>/<file path>`: an excluded file's symbols are unknown,
and a caller or callee in an excluded file is left out.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, text

from domain.code.symbols import line_slice
from domain.privacy import PrivacyPolicy

MAX_EDGES = 200  # callers (callees) answered per symbol; the total is answered beside them

SYMBOL_COLUMNS = ("s.symbol_id, s.repo, s.path, s.ordinal, s.qualified_name, s.name, s.kind, s.parent, s.signature,"
                  " s.doc, s.start_line, s.end_line, s.content_hash, s.ref_count, s.last_referenced_at")
_BY_IDS = text(f"SELECT {SYMBOL_COLUMNS} FROM code_symbols s WHERE s.tenant = :tenant AND s.symbol_id = ANY(:ids)")
_BY_NAME = text(f"""
SELECT {SYMBOL_COLUMNS} FROM code_symbols s
WHERE s.tenant = :tenant AND s.repo = :repo AND s.qualified_name = :qn
  AND (CAST(:path AS text) IS NULL OR s.path = :path)
ORDER BY s.path, s.ordinal
""")
_CONTENTS = text("SELECT path, content FROM code_files WHERE tenant = :tenant AND repo = :repo AND path = ANY(:paths)")
_CALLERS = text("""
SELECT caller, path, line FROM code_calls
WHERE tenant = :tenant AND repo = :repo AND resolved_name = :qn ORDER BY path, line, ordinal
""")
_UNRESOLVED = text("""
SELECT count(*) FROM code_calls WHERE tenant = :tenant AND repo = :repo AND target_name = :name
  AND resolved_name IS NULL AND how = 'ambiguous'
""")
_CALLEES = text("""
SELECT c.callee, c.qualifier, c.line, c.resolved_name, c.resolved_path, c.candidates, c.how,
       (SELECT min(t.start_line) FROM code_symbols t WHERE t.tenant = c.tenant AND t.repo = c.repo
          AND t.path = c.resolved_path AND t.qualified_name = c.resolved_name) AS defined_at
FROM code_calls c
WHERE c.tenant = :tenant AND c.repo = :repo AND c.path = :path AND c.caller = :qn ORDER BY c.ordinal
""")
_FILES = text("""
SELECT path, content_hash, language, symbols, calls, parse_errors, first_error_line, version FROM code_files
WHERE tenant = :tenant AND repo = :repo AND path > :after ORDER BY path LIMIT :limit
""")
_HAS_REPO = text("SELECT EXISTS (SELECT 1 FROM code_files WHERE tenant = :tenant AND repo = :repo)")


def gated(policy: PrivacyPolicy, repo: str, path: str | None) -> bool:
    """Whether the privacy policy hides a repository's file (its path as `<repo>/<file path>`)."""
    return path is not None and policy.excludes(path=f"{repo}/{path}")


def contents(conn: Connection, tenant: str, repo: str, paths: set[str]) -> dict[str, str]:
    return {r.path: r.content for r in conn.execute(_CONTENTS, {"tenant": tenant, "repo": repo,
                                                                "paths": sorted(paths)})}


def symbols_by_ids(conn: Connection, tenant: str, ids: list[Any]) -> dict[Any, Any]:
    return {r.symbol_id: r for r in conn.execute(_BY_IDS, {"tenant": tenant, "ids": ids})}


def symbols_named(conn: Connection, tenant: str, repo: str, qualified_name: str, policy: PrivacyPolicy,
                  path: str | None = None) -> list[Any]:
    rows = conn.execute(_BY_NAME, {"tenant": tenant, "repo": repo, "qn": qualified_name, "path": path}).all()
    return [r for r in rows if not gated(policy, r.repo, r.path)]


def handle_of(row: Any) -> dict[str, Any]:
    return {"repo": row.repo, "file": row.path, "qualified_name": row.qualified_name,
            "content_hash": row.content_hash}


def callers_of(conn: Connection, tenant: str, row: Any, policy: PrivacyPolicy) -> tuple[list[dict[str, Any]], int]:
    rows = [r for r in conn.execute(_CALLERS, {"tenant": tenant, "repo": row.repo, "qn": row.qualified_name})
            if not gated(policy, row.repo, r.path)]
    return [{"symbol": r.caller, "file": r.path, "line": r.line} for r in rows[:MAX_EDGES]], len(rows)


def callees_of(conn: Connection, tenant: str, row: Any, policy: PrivacyPolicy) -> list[dict[str, Any]]:
    out = []
    for r in conn.execute(_CALLEES, {"tenant": tenant, "repo": row.repo, "path": row.path,
                                     "qn": row.qualified_name}):
        if gated(policy, row.repo, r.resolved_path):
            continue
        out.append({"symbol": r.resolved_name or r.callee, "file": r.resolved_path, "line": r.defined_at,
                    "call_line": r.line, "resolved": r.resolved_name is not None, "how": r.how,
                    "candidates": r.candidates})
    return out[:MAX_EDGES]


def symbol_answer(conn: Connection, tenant: str, row: Any, policy: PrivacyPolicy, with_callees: bool = True,
                  content: str | None = None) -> dict[str, Any]:
    """The symbol as answered: definition (exact slice of its file), 1-hop callers, callees when asked."""
    if content is None:
        content = contents(conn, tenant, row.repo, {row.path}).get(row.path, "")
    callers, total = callers_of(conn, tenant, row, policy)
    answer: dict[str, Any] = {
        "symbol": row.qualified_name, "name": row.name, "kind": row.kind, "repo": row.repo, "file": row.path,
        "lines": [row.start_line, row.end_line], "signature": row.signature, "doc": row.doc,
        "source": line_slice(content, row.start_line, row.end_line), "content_hash": row.content_hash,
        "callers": callers, "callers_total": total,
        "unresolved_calls": conn.execute(_UNRESOLVED, {"tenant": tenant, "repo": row.repo,
                                                       "name": row.name}).scalar_one(),
        "ref_count": row.ref_count}
    if with_callees:
        answer["callees"] = callees_of(conn, tenant, row, policy)
    return answer


def list_files(conn: Connection, tenant: str, repo: str, policy: PrivacyPolicy, after: str = "",
               limit: int = 1000) -> tuple[list[dict[str, Any]], str | None]:
    """A page of the repository's files by path (what `engramlog code index` compares with) and the next cursor."""
    rows = conn.execute(_FILES, {"tenant": tenant, "repo": repo, "after": after, "limit": limit + 1}).all()
    page = rows[:limit]
    files = [dict(r._mapping) for r in page if not gated(policy, repo, r.path)]
    return files, (page[-1].path if len(rows) > limit else None)


def has_repo(conn: Connection, tenant: str, repo: str) -> bool:
    return bool(conn.execute(_HAS_REPO, {"tenant": tenant, "repo": repo}).scalar_one())


__all__ = ["MAX_EDGES", "callees_of", "callers_of", "contents", "gated", "handle_of", "has_repo", "list_files",
           "symbol_answer", "symbols_by_ids", "symbols_named"]
