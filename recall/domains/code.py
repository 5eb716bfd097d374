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
graph is not versioned: recall/code_symbols.py). Code has no valid time.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine, text

from domain.code.terms import query_terms
from domain.memory_status import RECALLABLE
from domain.privacy import PrivacyPolicy
from infra.settings import get_settings
from readmodels.item_domains import SYMBOLS
from recall.code_symbols import gated, handle_of, symbol_answer, symbol_answers, symbols_by_ids, symbols_named
from recall.domains.base import DomainAnswer, DomainHit, DomainQuery
from recall.hybrid import HybridLeg, answer, gather, graded, pool_size, scored
from recall.keyword import KeywordTables
from recall.relevance import scale
from recall.scope import Scope
from recall.timeframe import CODE_SYMBOL_VERSIONS, NOW, TimeFrame

CODE = SYMBOLS.name
CODE_KEYWORD = KeywordTables.of(SYMBOLS)
RECALLED = RECALLABLE  # answered by default: the memories' and knowledge's rule
HISTORY = ("archived",)  # answered only when history is asked for, scored ×recall.hybrid.HISTORY_FACTOR
CODE_LEG = HybridLeg(CODE_KEYWORD, None, RECALLED, HISTORY, versions=SYMBOLS.versions)  # keyword only


def _has_data(frame: TimeFrame) -> Any:
    return text(f"SELECT EXISTS (SELECT 1 FROM {frame.units(CODE_SYMBOL_VERSIONS)} s WHERE s.tenant = :tenant"
                " AND s.status = ANY(:statuses))")


class CodeDomain:
    name = CODE
    times: tuple[str, ...] = ("recorded",)  # no valid time; code_symbol_versions (as_of)
    read_models = (SYMBOLS.projection,)  # what a read of it waits for (min_position)

    def has_data(self, conn: Connection, scope: Scope, frame: TimeFrame = NOW) -> bool:
        return bool(conn.execute(_has_data(frame), {"tenant": scope.tenant, "statuses": list(RECALLED),
                                                    **frame.params()}).scalar_one())

    def search(self, engine: Engine, q: DomainQuery) -> DomainAnswer:
        settings = get_settings()
        scope = Scope(q.scope.tenant)  # repositories belong to the tenant, not to an agent, project or session
        repo = q.options.get("repo")
        params: dict[str, object] = {"repo": repo} if isinstance(repo, str) else {}
        where = "d.repo = :repo" if params else ""
        n = pool_size(settings, q, gated_per_item=True)
        with engine.connect() as conn:
            conn.exec_driver_sql("SET TRANSACTION READ ONLY")
            if not self.has_data(conn, scope, q.frame) and not q.include_history:
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
        grade = scale(CODE, settings.embedding_model)
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


__all__ = ["CODE", "CODE_KEYWORD", "CODE_LEG", "CodeDomain"]
