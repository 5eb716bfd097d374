"""Reading the code read models: a symbol's answer (its definition as the exact slice of its file, its 1-hop
callers, and on request its callees), symbol rows by id or qualified name, and a repository's file list.

Every answer passes the privacy gate with the path `<repo>/<file path>`: an excluded file's symbols are unknown,
and a caller or callee in an excluded file is left out.

The current reads leave out the symbols their file no longer defines (kept as 'replaced' or 'removed' for reads as
of a position: domain/code/status.py). As of a position (a `TimeFrame` with as_of), a symbol is read with its
status then (code_symbol_versions) and its source sliced from the text its file was put with (code_file_texts);
the call graph is not versioned, so a symbol as of a position answers no callers or callees (`edges: false`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, text

from domain.code.status import held_sql
from domain.code.symbols import line_slice
from domain.privacy import PrivacyPolicy, code_file_excluded
from recall.timeframe import CODE_SYMBOL_VERSIONS, NOW, TimeFrame
from recall.visible_pages import visible_page

MAX_EDGES = 200  # callers (callees) answered per symbol; the total is answered beside them

SYMBOL_COLUMNS = ("s.symbol_id, s.repo, s.path, s.ordinal, s.qualified_name, s.name, s.kind, s.parent, s.signature,"
                  " s.doc, s.start_line, s.end_line, s.content_hash, s.ref_count, s.last_referenced_at, s.status")


def _by_ids(frame: TimeFrame) -> Any:
    return text(f"SELECT {SYMBOL_COLUMNS} FROM {frame.units(CODE_SYMBOL_VERSIONS)} s"
                " WHERE s.tenant = :tenant AND s.symbol_id = ANY(:ids)")


def _by_name(frame: TimeFrame) -> Any:
    """The symbols of a qualified name their files define (now, or as of the frame)."""
    return text(f"""
    SELECT {SYMBOL_COLUMNS} FROM {frame.units(CODE_SYMBOL_VERSIONS)} s
    WHERE s.tenant = :tenant AND s.repo = :repo AND s.qualified_name = :qn AND {held_sql("s")}
      AND (CAST(:path AS text) IS NULL OR s.path = :path)
    ORDER BY s.path, s.ordinal
    """)


_TEXTS = text("""
SELECT t.path, t.content FROM code_file_texts t
JOIN unnest(CAST(:paths AS text[]), CAST(:hashes AS text[])) AS b(path, content_hash)
  ON t.path = b.path AND t.content_hash = b.content_hash
WHERE t.tenant = :tenant AND t.repo = :repo
""")
_CONTENTS = text("SELECT path, content FROM code_files WHERE tenant = :tenant AND repo = :repo AND path = ANY(:paths)")
_CALLERS = text("""
SELECT resolved_name, caller, path, line FROM code_calls
WHERE tenant = :tenant AND repo = :repo AND resolved_name = ANY(:qns) ORDER BY path, line, ordinal
""")
_UNRESOLVED = text("""
SELECT target_name, count(*) AS n FROM code_calls WHERE tenant = :tenant AND repo = :repo
  AND target_name = ANY(:names) AND resolved_name IS NULL AND how = 'ambiguous' GROUP BY target_name
""")
_CALLEES = text(f"""
SELECT c.path AS caller_path, c.caller, c.callee, c.qualifier, c.line, c.resolved_name, c.resolved_path,
       c.candidates, c.how,
       (SELECT min(t.start_line) FROM code_symbols t WHERE t.tenant = c.tenant AND t.repo = c.repo
          AND t.path = c.resolved_path AND t.qualified_name = c.resolved_name AND {held_sql("t")}) AS defined_at
FROM code_calls c
JOIN unnest(CAST(:paths AS text[]), CAST(:qns AS text[])) AS b(path, qn) ON c.path = b.path AND c.caller = b.qn
WHERE c.tenant = :tenant AND c.repo = :repo ORDER BY c.path, c.ordinal
""")
_FILES = text("""
SELECT path, content_hash, language, symbols, calls, parse_errors, first_error_line, version FROM code_files
WHERE tenant = :tenant AND repo = :repo AND path > :after ORDER BY path LIMIT :limit
""")
_REPO_FILES = text("""
SELECT repo, path, symbols FROM code_files WHERE tenant = :tenant ORDER BY repo, path
""")


def gated(policy: PrivacyPolicy, repo: str, path: str | None) -> bool:
    """Whether the privacy policy hides a repository's file (its path as `<repo>/<file path>`)."""
    return path is not None and code_file_excluded(policy, repo, path)


def contents(conn: Connection, tenant: str, repo: str, paths: set[str]) -> dict[str, str]:
    return {r.path: r.content for r in conn.execute(_CONTENTS, {"tenant": tenant, "repo": repo,
                                                                "paths": sorted(paths)})}


def texts_of(conn: Connection, tenant: str, repo: str, rows: list[Any]) -> dict[str, str]:
    """The text each row's file was put with (by the row's content hash): what a symbol as of a position is sliced
    from. A path has one content hash among the rows a frame reads."""
    pairs = sorted({(r.path, r.content_hash) for r in rows})
    return {r.path: r.content for r in conn.execute(_TEXTS, {"tenant": tenant, "repo": repo,
                                                             "paths": [p for p, _ in pairs],
                                                             "hashes": [h for _, h in pairs]})}


def symbols_by_ids(conn: Connection, tenant: str, ids: list[Any], frame: TimeFrame = NOW) -> dict[Any, Any]:
    """The rows of those ids (any status; as of the frame: those that existed then, with their status then)."""
    return {r.symbol_id: r for r in conn.execute(_by_ids(frame), {"tenant": tenant, "ids": ids, **frame.params()})}


def symbols_named(conn: Connection, tenant: str, repo: str, qualified_name: str, policy: PrivacyPolicy,
                  path: str | None = None, frame: TimeFrame = NOW) -> list[Any]:
    rows = conn.execute(_by_name(frame), {"tenant": tenant, "repo": repo, "qn": qualified_name, "path": path,
                                          **frame.params()}).all()
    return [r for r in rows if not gated(policy, r.repo, r.path)]


def handle_of(row: Any) -> dict[str, Any]:
    return {"repo": row.repo, "file": row.path, "qualified_name": row.qualified_name,
            "content_hash": row.content_hash}


def symbol_answers(conn: Connection, tenant: str, rows: list[Any], policy: PrivacyPolicy,
                   with_callees: bool = True, files: dict[tuple[str, str], str] | None = None,
                   frame: TimeFrame = NOW) -> list[dict[str, Any]]:
    """Each symbol as answered: its definition (the exact slice of its file), its 1-hop callers, its callees
    when asked. A few statements per repository, whatever the number of symbols. As of a position: the slice of
    the text its file had, and no edges (the module's docstring)."""
    files = dict(files or {})
    callers: dict[tuple[str, str], list[Any]] = {}
    unresolved: dict[tuple[str, str], int] = {}
    callees: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for repo in sorted({r.repo for r in rows}):
        mine = [r for r in rows if r.repo == repo]
        if not frame.current:
            files.update({(repo, p): c for p, c in texts_of(conn, tenant, repo, mine).items()})
            continue
        missing = {r.path for r in mine if (repo, r.path) not in files}
        files.update({(repo, p): c for p, c in contents(conn, tenant, repo, missing).items()})
        key = {"tenant": tenant, "repo": repo}
        for c in conn.execute(_CALLERS, {**key, "qns": sorted({r.qualified_name for r in mine})}):
            if not gated(policy, repo, c.path):
                callers.setdefault((repo, c.resolved_name), []).append(c)
        for u in conn.execute(_UNRESOLVED, {**key, "names": sorted({r.name for r in mine})}):
            unresolved[(repo, u.target_name)] = u.n
        if with_callees:
            for c in conn.execute(_CALLEES, {**key, "paths": [r.path for r in mine],
                                             "qns": [r.qualified_name for r in mine]}):
                if not gated(policy, repo, c.resolved_path):
                    callees.setdefault((repo, c.caller_path, c.caller), []).append({
                        "symbol": c.resolved_name or c.callee, "file": c.resolved_path, "line": c.defined_at,
                        "call_line": c.line, "resolved": c.resolved_name is not None, "how": c.how,
                        "candidates": c.candidates})
    out = []
    for row in rows:
        mine = callers.get((row.repo, row.qualified_name), [])
        answer: dict[str, Any] = {
            "symbol": row.qualified_name, "name": row.name, "kind": row.kind, "repo": row.repo, "file": row.path,
            "lines": [row.start_line, row.end_line], "signature": row.signature, "doc": row.doc,
            "source": line_slice(files.get((row.repo, row.path), ""), row.start_line, row.end_line),
            "content_hash": row.content_hash,
            "callers": [{"symbol": c.caller, "file": c.path, "line": c.line} for c in mine[:MAX_EDGES]],
            "callers_total": len(mine), "unresolved_calls": unresolved.get((row.repo, row.name), 0),
            "ref_count": row.ref_count, "edges": frame.current}
        if with_callees:
            answer["callees"] = callees.get((row.repo, row.path, row.qualified_name), [])[:MAX_EDGES]
        out.append(answer)
    return out


def symbol_answer(conn: Connection, tenant: str, row: Any, policy: PrivacyPolicy,
                  with_callees: bool = True, frame: TimeFrame = NOW) -> dict[str, Any]:
    [answer] = symbol_answers(conn, tenant, [row], policy, with_callees, frame=frame)
    return answer


def list_files(conn: Connection, tenant: str, repo: str, policy: PrivacyPolicy, after: str = "",
               limit: int = 1000) -> tuple[list[dict[str, Any]], str | None]:
    """A page of the repository's files by path (what `engramlog code index` compares with) and the next cursor."""
    def read(cursor: str, n: int) -> list[Any]:
        return list(conn.execute(_FILES, {"tenant": tenant, "repo": repo, "after": cursor, "limit": n}).all())

    rows, next_after = visible_page(read, lambda r: r.path, lambda r: not gated(policy, repo, r.path), after, limit)
    return [dict(r._mapping) for r in rows], next_after


def list_repos(conn: Connection, tenant: str, policy: PrivacyPolicy) -> list[dict[str, Any]]:
    """The tenant's repositories with their visible files and symbols counted; a repository whose every file the
    policy hides is not listed (as one never indexed)."""
    repos: dict[str, dict[str, Any]] = {}
    rows = conn.execution_options(stream_results=True, yield_per=5000).execute(_REPO_FILES, {"tenant": tenant})
    for r in rows:
        if not gated(policy, r.repo, r.path):
            repo = repos.setdefault(r.repo, {"repo": r.repo, "files": 0, "symbols": 0})
            repo["files"] += 1
            repo["symbols"] += r.symbols
    return list(repos.values())


__all__ = ["MAX_EDGES", "contents", "gated", "handle_of", "list_files", "list_repos", "symbol_answer", "symbol_answers",
           "symbols_by_ids", "symbols_named", "texts_of"]
