"""The memories domain on the seam: the recall funnel (recall/service.py) over the memories read models."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Connection, Engine, ScalarSelect

from domain.errors import NotFound
from domain.events import MEMORIES
from domain.memory_status import RECALLABLE
from domain.privacy import PrivacyPolicy
from infra.embedding import Embedder, get_embedder
from infra.settings import Settings, get_settings
from recall import queries
from recall.consistency import READ_MODELS
from recall.domains.base import DomainAnswer, DomainHit, DomainQuery, data_check, held
from recall.scope import Scope
from recall.service import RecallRequest, RecallResult, search
from recall.timeframe import NOW, TimeFrame


def hit(r: RecallResult) -> DomainHit:
    legs = {"keyword": r.explanation.get("bm25"), "vector": r.explanation.get("cosine")}
    return DomainHit(content=r.content, score=r.score, handle={"memory_id": str(r.memory_id)}, legs=legs,
                     relevance=r.relevance,
                     memory_id=r.memory_id, fields={"kind": r.kind, "metadata": r.metadata,
                                                    "occurred_at": r.occurred_at.isoformat()},
                     explanation=r.explanation)


class MemoryDomain:
    name = MEMORIES  # the hit-log's name of its results' domain (domain/events/hitlog.py)
    read_models = READ_MODELS  # what a read of it waits for (min_position); a vector may follow
    vector_leg = True  # the funnel's vector leg
    times = ("valid", "recorded")  # occurred_at; memory_versions

    def __init__(self, settings: Settings | None = None, embedder: Embedder | None = None) -> None:
        self._settings, self._embedder = settings, embedder

    @property
    def settings(self) -> Settings:
        return self._settings or get_settings()

    def data_check(self, scope: Scope, frame: TimeFrame = NOW) -> ScalarSelect[Any]:
        where, params = scope.where("m")
        return data_check(f"SELECT EXISTS (SELECT 1 FROM memories m WHERE {where} AND m.status = ANY(:statuses))",
                          {**params, "statuses": list(RECALLABLE)})

    def has_data(self, conn: Connection, scope: Scope) -> bool:
        return held(conn, {self.name: self.data_check(scope)})[self.name]

    def search(self, engine: Engine, q: DomainQuery) -> DomainAnswer:
        settings = self.settings
        embedder = self._embedder or get_embedder(settings.embedding.embedding_model)
        request = RecallRequest(q.scope, q.query, q.k, include_history=q.include_history,
                                include_staging=bool(q.options.get("include_staging")),
                                include_archived=bool(q.options.get("include_archived")), frame=q.frame)
        vectors = {q.query: q.query_vector} if q.query_vector else {}
        found = search(engine, embedder, settings, request, q.policy, vectors, q.now)
        reason = None
        if found.abstained:
            reason = f"abstained: {found.abstained['reason']}"
        elif not found.results:
            reason = "nothing relevant"
        return DomainAnswer([hit(r) for r in found.results], reason, found.explanation)

    def fetch(self, conn: Connection, scope: Scope, handle: dict[str, Any], policy: PrivacyPolicy) -> Any:
        try:
            row = queries.memory(conn, scope.tenant, uuid.UUID(str(handle.get("memory_id"))))
        except (NotFound, ValueError):
            return None
        return None if policy.excludes_record(row) else row
