"""The code domain: symbol search over the repositories' symbols, and the drill (a symbol by its handle).

search: Okapi BM25 (recall/keyword.py's one statement, with the code tables) over each symbol's name split on
case and underscores, its qualified name, signature and docstring (domain/code/terms.py), normalised by
domain/ranking.fuse (recall/hybrid.py, the leg knowledge and transcripts share; keyword only: code has no vector
leg). Each hit answers the symbol's definition as the exact slice of its file, with its 1-hop callers
(`callees: true` in the request's options adds its callees; `repo` keeps the search to one repository).
Every answered symbol passes the privacy gate (`<repo>/<path>`).

Active and dormant symbols answer (dormant: unreferenced for a while, workers/reference_decay.py), as knowledge's
sections do; archived ones only with include_history, scored ×0.1.

A result's handle {repo, file, qualified_name, content_hash} names the symbol; fetch answers it as it is now,
with `current_differs` when the file changed since the handle was served.

Under as_of (recorded time) both search and fetch read the symbols as they stood at the position: the BM25 leg's
status filter reads each symbol's version then (code_symbol_versions, `HybridLeg.framed`), the rows come through
`TimeFrame.units`, a source is sliced from the text its file had then, and no call edges are answered (the call
graph is not versioned). Code has no valid time.

Reading the code read models (also for the API's routes): a symbol's answer (its definition as the exact slice of
its file, its 1-hop callers, and on request its callees), symbol rows by id or qualified name, and a repository's
file list. Every answer passes the privacy gate with the path `<repo>/<file path>`: an excluded file's symbols are
unknown, and a caller or callee in an excluded file is left out. The current reads leave out the symbols their file
no longer defines (kept as 'replaced' or 'removed' for reads as of a position: domain/code/status.py). As of a
position, a symbol is read with its status then (code_symbol_versions) and its source sliced from the text its file
was put with (code_file_texts); the call graph is not versioned, so a symbol as of a position answers no callers or
callees (`edges: false`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine, ScalarSelect, text

from domain.code.status import held_sql
from domain.code.symbols import line_slice
from domain.code.terms import query_terms
from domain.memory_status import RECALLABLE
from domain.privacy import PrivacyPolicy, code_file_excluded
from infra.db import read_only
from infra.settings import get_settings
from readmodels.item_domains import SYMBOLS
from recall.domains.base import DomainAnswer, DomainHit, DomainQuery, data_check, held
from recall.hybrid import HybridLeg, answer, gather, graded, pool_size, scored
from recall.keyword import KeywordTables
from recall.relevance import scale
from recall.scope import Scope
from recall.timeframe import NOW, TimeFrame
from recall.visible_pages import visible_page

MAX_EDGES = 200  # callers (callees) answered per symbol; the total is answered beside them

SYMBOL_COLUMNS = ("s.symbol_id, s.repo, s.path, s.ordinal, s.qualified_name, s.name, s.kind, s.parent, s.signature,"
                  " s.doc, s.start_line, s.end_line, s.content_hash, s.ref_count, s.last_referenced_at, s.status")


def _by_ids(frame: TimeFrame) -> Any:
    return text(f"SELECT {SYMBOL_COLUMNS} FROM {frame.units(SYMBOLS.versions)} s"
                " WHERE s.tenant = :tenant AND s.symbol_id = ANY(:ids)")


def _by_name(frame: TimeFrame) -> Any:
    """The symbols of a qualified name their files define (now, or as of the frame)."""
    return text(f"""
    SELECT {SYMBOL_COLUMNS} FROM {frame.units(SYMBOLS.versions)} s
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


CODE = SYMBOLS.name
CODE_KEYWORD = KeywordTables.of(SYMBOLS)
RECALLED = RECALLABLE  # answered by default: the memories' and knowledge's rule
HISTORY = ("archived",)  # answered only when history is asked for, scored ×recall.hybrid.HISTORY_FACTOR
CODE_LEG = HybridLeg(CODE_KEYWORD, None, RECALLED, HISTORY, versions=SYMBOLS.versions)  # keyword only


def _has_data(frame: TimeFrame) -> str:
    return (f"SELECT EXISTS (SELECT 1 FROM {frame.units(SYMBOLS.versions)} s WHERE s.tenant = :tenant"
                " AND s.status = ANY(:statuses))")


class CodeDomain:
    name = CODE
    times: tuple[str, ...] = ("recorded",)  # no valid time; code_symbol_versions (as_of)
    read_models = (SYMBOLS.projection,)  # what a read of it waits for (min_position)
    vector_leg = SYMBOLS.vectors is not None  # a vectors table declared: the query's vector is read

    def data_check(self, scope: Scope, frame: TimeFrame = NOW) -> ScalarSelect[Any]:
        return data_check(_has_data(frame), {"tenant": scope.tenant, "statuses": list(RECALLED), **frame.params()})

    def has_data(self, conn: Connection, scope: Scope, frame: TimeFrame = NOW) -> bool:
        return held(conn, {self.name: self.data_check(scope, frame)})[self.name]

    def search(self, engine: Engine, q: DomainQuery) -> DomainAnswer:
        settings = get_settings()
        scope = Scope(q.scope.tenant)  # repositories belong to the tenant, not to an agent, project or session
        repo = q.options.get("repo")
        params: dict[str, object] = {"repo": repo} if isinstance(repo, str) else {}
        where = "d.repo = :repo" if params else ""
        n = pool_size(settings, q, gated_per_item=True)
        with read_only(engine) as conn:
            if not q.held and not self.has_data(conn, scope, q.frame) and not q.include_history:
                return DomainAnswer([], "no data")
            legs = gather(conn, scope, CODE_LEG.framed(q.frame), query_terms(q.query), None, n, settings,
                          CODE_LEG.statuses(q.include_history), where, {**params, **q.frame.params()})
            ids = legs.ids
            if not ids:
                return DomainAnswer([], "no match")
            rows = symbols_by_ids(conn, scope.tenant, ids, q.frame)
            allowed = [i for i in ids if i in rows and not gated(q.policy, rows[i].repo, rows[i].path)]
            fused = scored(legs, allowed, CODE_LEG, lambda i: rows[i].status, settings)
            fused.sort(key=lambda f: (-f.score, rows[f.id].repo, rows[f.id].path, rows[f.id].ordinal))
            top = [rows[f.id] for f in fused[:q.k]]
            symbols = symbol_answers(conn, scope.tenant, top, q.policy, bool(q.options.get("callees")),
                                     frame=q.frame)
        grade = scale(CODE, settings.embedding.embedding_model)
        hits = [DomainHit(content=source, score=f.score, handle=handle_of(row), legs=f.legs, relevance=rel,
                          fields={**symbol, "status": row.status}, explanation=why)
                for f, row, symbol in zip(fused, top, symbols, strict=False)
                for source in (symbol.pop("source"),)
                for rel, why in (graded(f, grade, q.query, source),)]
        return answer(hits, q.k, len(ids), len(allowed))

    def fetch(self, conn: Connection, scope: Scope, handle: dict[str, Any], policy: PrivacyPolicy,
              frame: TimeFrame = NOW) -> Any:
        """The symbol a handle names, as it is now (with callers and callees, `current_differs` when its file
        changed since) or as of the frame (no edges), or None when unknown (then) or excluded."""
        if not all(isinstance(handle.get(k), str) for k in ("repo", "file", "qualified_name")):
            return None
        rows = symbols_named(conn, scope.tenant, handle["repo"], handle["qualified_name"], policy, handle["file"],
                             frame)
        if not rows:
            return None
        answer = symbol_answer(conn, scope.tenant, rows[0], policy, frame=frame)
        answer["current_differs"] = handle.get("content_hash") not in (None, rows[0].content_hash)
        return answer


__all__ = ["CODE", "CODE_KEYWORD", "CODE_LEG", "CodeDomain", "MAX_EDGES", "contents", "gated", "handle_of",
           "list_files", "list_repos", "symbol_answer", "symbol_answers", "symbols_by_ids", "symbols_named", "texts_of"]
