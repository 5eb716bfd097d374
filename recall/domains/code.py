"""The code domain: symbol search over the repositories' symbols, and the drill (a symbol by its handle).

search: Okapi BM25 (recall/keyword.py's one statement, with the code tables) over each symbol's name split on
case and underscores, its qualified name, signature and docstring (domain/code/terms.py), normalised by
domain/ranking.fuse (keyword only: code has no vector leg). Each hit answers the symbol's definition as the exact
slice of its file, with its 1-hop callers (`callees: true` in the request's options adds its callees;
`repo` keeps the search to one repository). Every answered symbol passes the privacy gate (`<repo>/<path>`).

Active and dormant symbols answer (dormant: unreferenced for a while, workers/reference_decay.py), as knowledge's
sections do; archived ones only with include_history, scored ×0.1.

A result's handle {repo, file, qualified_name, content_hash} names the symbol; fetch answers it as it is now,
with `current_differs` when the file changed since the handle was served.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine, text

from domain.code.terms import query_terms
from domain.memory_status import RECALLABLE
from domain.privacy import PrivacyPolicy
from domain.ranking import Candidate, fuse
from infra.settings import get_settings
from recall.code_symbols import gated, handle_of, symbol_answer, symbol_answers, symbols_by_ids, symbols_named
from recall.domains.base import DomainAnswer, DomainHit, DomainQuery
from recall.keyword import KeywordTables, bm25_top
from recall.scope import Scope

CODE = "code"
CODE_KEYWORD = KeywordTables("code_postings", "code_terms", "code_stats", "code_symbols", "symbol_id",
                             "d.status = ANY(:statuses)")
RECALLED = RECALLABLE  # answered by default: the memories' and knowledge's rule
HISTORY = ("archived",)  # answered only when history is asked for, scored ×HISTORY_FACTOR
HISTORY_FACTOR = 0.1
_HAS_DATA = text("SELECT EXISTS (SELECT 1 FROM code_symbols WHERE tenant = :tenant AND status = ANY(:statuses))")


class CodeDomain:
    name = CODE

    def has_data(self, conn: Connection, scope: Scope) -> bool:
        return bool(conn.execute(_HAS_DATA, {"tenant": scope.tenant, "statuses": list(RECALLED)}).scalar_one())

    def search(self, engine: Engine, q: DomainQuery) -> DomainAnswer:
        settings = get_settings()
        scope = Scope(q.scope.tenant)  # repositories belong to the tenant, not to an agent, project or session
        repo = q.options.get("repo")
        where, params = ("d.repo = :repo", {"repo": repo}) if isinstance(repo, str) else ("", {})
        n = max(settings.candidates_per_leg, q.k * 3) * (2 if q.policy.exclude_paths else 1)
        with engine.connect() as conn:
            conn.exec_driver_sql("SET TRANSACTION READ ONLY")
            if not self.has_data(conn, scope) and not q.include_history:
                return DomainAnswer([], "no data")
            statuses = RECALLED + HISTORY if q.include_history else RECALLED
            bm25 = bm25_top(conn, scope, query_terms(q.query), n, settings.bm25_k1, settings.bm25_b, statuses,
                            CODE_KEYWORD, where, params)
            if not bm25:
                return DomainAnswer([], "no match")
            rows = symbols_by_ids(conn, scope.tenant, list(bm25))
            allowed = [i for i in sorted(bm25, key=str) if i in rows and not gated(q.policy, rows[i].repo,
                                                                                   rows[i].path)]
            fused = fuse([Candidate(i, bm25[i], None) for i in allowed], settings.weight_vector,
                         settings.weight_keyword, settings.score_threshold)
            factor = {s.memory_id: HISTORY_FACTOR if rows[s.memory_id].status in HISTORY else 1.0 for s in fused}
            fused.sort(key=lambda s: (-s.score * factor[s.memory_id], rows[s.memory_id].repo,
                                      rows[s.memory_id].path, rows[s.memory_id].ordinal))
            top = [rows[s.memory_id] for s in fused[:q.k]]
            answers = symbol_answers(conn, scope.tenant, top, q.policy, bool(q.options.get("callees")))
        hits = [DomainHit(content=answer.pop("source"), score=s.score * factor[s.memory_id], handle=handle_of(row),
                          legs={"keyword": s.bm25}, fields={**answer, "status": row.status},
                          explanation={"bm25_normalised": s.bm25_normalised, "history_factor": factor[s.memory_id]})
                for s, row, answer in zip(fused, top, answers, strict=False)]
        reason = None if hits else ("excluded" if len(allowed) < len(bm25) else "below threshold")
        return DomainAnswer(hits, reason, {"candidates": len(bm25), "gated": len(bm25) - len(allowed)})

    def fetch(self, conn: Connection, scope: Scope, handle: dict[str, Any], policy: PrivacyPolicy) -> Any:
        """The symbol a handle names, as it is now (with callers and callees, `current_differs` when its file
        changed since), or None when unknown or excluded."""
        if not all(isinstance(handle.get(k), str) for k in ("repo", "file", "qualified_name")):
            return None
        rows = symbols_named(conn, scope.tenant, handle["repo"], handle["qualified_name"], policy, handle["file"])
        if not rows:
            return None
        answer = symbol_answer(conn, scope.tenant, rows[0], policy)
        answer["current_differs"] = handle.get("content_hash") not in (None, rows[0].content_hash)
        return answer


__all__ = ["CODE", "CODE_KEYWORD", "CodeDomain"]
