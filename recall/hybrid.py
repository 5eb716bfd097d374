"""The hybrid leg of the item domains (knowledge sections, transcript chunks, code symbols): one way to gather
their candidates and score them.

gather: Okapi BM25 over the domain's postings (recall/keyword.py bm25_top) ∪, when the domain has a vector table
and the query a vector, the filtered vector search over the items embedded in the configured model
(recall/vector.py nearest_vectors); a BM25 candidate outside the vector leg's top gets its cosine when it has a
vector (cosines_for). scored: the one fusion function (domain/ranking.fuse: 0.6·cosine + 0.4·min-max BM25; an item
without a vector is scored on its BM25 leg renormalised to weight 1), then ×history_factor for an item in one of
the domain's history statuses (answered only with include_history). graded: a hit's calibrated relevance
(recall/relevance.py), the scale every domain's results share.

A domain keeps only what is its own: its rows, the privacy gate, its handles, fields and tie order, and the drill.
The memories funnel (recall/funnel/) has its own stages and calls the same legs and fusion function.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import Connection

from domain.ranking import Candidate, Scored, fuse
from infra.settings import Settings
from readmodels.unit_versions import UnitVersions
from recall.domains.base import DomainAnswer, DomainHit, DomainQuery
from recall.keyword import KeywordTables, bm25_top
from recall.relevance import Scale
from recall.scope import Scope
from recall.timeframe import TimeFrame
from recall.vector import QueryVector, VectorTable, cosines_for, literal, nearest_vectors

HISTORY_FACTOR = 0.1  # an item answered only because history was asked for weighs a tenth


@dataclass(frozen=True)
class HybridLeg:
    """A domain's tables and statuses: its BM25 postings, its vectors (None: keyword only), the statuses answered
    by default and those answered only with include_history."""
    keyword: KeywordTables
    vectors: VectorTable | None
    recalled: tuple[str, ...]
    history: tuple[str, ...]
    history_factor: float = HISTORY_FACTOR
    versions: UnitVersions | None = None  # its units' recorded-time versions (None: it answers no as_of)

    def framed(self, frame: TimeFrame) -> HybridLeg:
        """This leg as of the frame: under as_of, both legs take a unit's existence and status from its version at
        the position (frame.params() binds :tf_as_of), not from the current row."""
        if frame.as_of is None or self.versions is None:
            return self
        status = self.versions.status_as_of("d")
        vectors = None if self.vectors is None else replace(self.vectors, status_filter=status)
        return replace(self, keyword=replace(self.keyword, status_filter=status), vectors=vectors)

    def statuses(self, include_history: bool) -> tuple[str, ...]:
        return self.recalled + self.history if include_history else self.recalled

    def factor(self, status: str) -> float:
        return self.history_factor if status in self.history else 1.0


@dataclass(frozen=True)
class Legs:
    """Each candidate's BM25 and cosine (absent: not matched by that leg, or no vector)."""
    bm25: dict[Any, float]
    vector: dict[Any, float] = field(default_factory=dict)

    @property
    def ids(self) -> list[Any]:
        return sorted(set(self.bm25) | set(self.vector), key=str)


@dataclass(frozen=True)
class FusedHit:
    """A candidate's fused score (×its history factor) and what the hit-log says of it."""
    id: Any
    score: float
    scored: Scored
    history_factor: float
    with_vector: bool

    @property
    def legs(self) -> dict[str, float | None]:
        legs: dict[str, float | None] = {"keyword": self.scored.bm25}
        if self.with_vector:
            legs["vector"] = self.scored.cosine
        return legs

    @property
    def explanation(self) -> dict[str, Any]:
        s = self.scored
        if not self.with_vector:
            return {"bm25_normalised": s.bm25_normalised, "history_factor": self.history_factor}
        return {"bm25_normalised": s.bm25_normalised, "weight_vector": s.weight_vector,
                "weight_keyword": s.weight_keyword, "history_factor": self.history_factor}


def pool_size(settings: Settings, q: DomainQuery, gated_per_item: bool) -> int:
    """How many candidates each leg fetches: more when the privacy gate drops some only after the query (paths)."""
    return max(settings.hybrid.candidates_per_leg, q.k * 3) * (2 if gated_per_item and q.policy.exclude_paths else 1)


def gather(conn: Connection, scope: Scope, leg: HybridLeg, terms: list[str], query_vector: QueryVector | None, n: int,
           settings: Settings, statuses: tuple[str, ...], where_sql: str = "",
           where_params: dict[str, object] | None = None) -> Legs:
    """Both legs' top `n` in `scope` among items in one of `statuses` (and `where_sql` on d), with the cosine of
    every candidate that has a vector. The keyword leg runs first: a `query_vector` still being computed is waited
    for only after it."""
    bm25 = bm25_top(conn, scope, terms, n, settings.keyword.bm25_k1, settings.keyword.bm25_b, statuses, leg.keyword,
                    where_sql, where_params)
    if query_vector is None or leg.vectors is None:
        return Legs(bm25)
    vector_literal = literal(query_vector)
    [(nearest, _)] = nearest_vectors(conn, scope, [vector_literal], n, settings, statuses, leg.vectors, where_sql,
                                     where_params)
    vector = dict(nearest)
    vector.update(cosines_for(conn, scope.tenant, [i for i in sorted(bm25, key=str) if i not in vector],
                              vector_literal, settings.embedding.embedding_model, leg.vectors))
    return Legs(bm25, vector)


def scored(legs: Legs, allowed: Sequence[uuid.UUID], leg: HybridLeg, status_of: Callable[[Any], str],
           settings: Settings) -> list[FusedHit]:
    """The `allowed` candidates fused (those under the score threshold dropped), each ×its history factor, in
    fusion order (best fused score first)."""
    with_vector = leg.vectors is not None
    fused = fuse([Candidate(i, legs.bm25.get(i), legs.vector.get(i)) for i in allowed], settings.hybrid.weight_vector,
                 settings.hybrid.weight_keyword, settings.hybrid.score_threshold)
    out = []
    for s in fused:
        factor = leg.factor(status_of(s.memory_id))
        out.append(FusedHit(s.memory_id, s.score * factor, s, factor, with_vector))
    return out


def graded(f: FusedHit, relevance: Scale, query: str, content: str,
           title_only: bool = False) -> tuple[float, dict[str, Any]]:
    """A fused hit's calibrated relevance (recall/relevance.py) and its explanation with the relevance's inputs."""
    features = relevance.features(query, content, f.scored.cosine, f.scored.bm25, title_only)
    return relevance.of(features), {**f.explanation, "relevance": relevance.explain(features)}


def answer(hits: list[DomainHit], k: int, candidates: int, allowed: int) -> DomainAnswer:
    """The top k hits (already in the domain's order), and why there are none: the gate or the threshold."""
    reason = None if hits else ("excluded" if allowed < candidates else "below threshold")
    return DomainAnswer(hits[:k], reason, {"candidates": candidates, "gated": candidates - allowed})


__all__ = ["HISTORY_FACTOR", "FusedHit", "HybridLeg", "Legs", "answer", "gather", "graded", "pool_size", "scored"]
