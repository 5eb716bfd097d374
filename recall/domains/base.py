"""What a recall domain is: the one small interface every domain plugs into the aggregator through.

A domain (memories, knowledge, and later sessions, transcripts, code) owns its read models and answers three
things: whether the scope holds any of its data, a search for a query, and an exact fetch by the handle one of
its results carried (the drill). Its results say what its hit-log entries carry (domain, layer, handle, legs).
The aggregator (recall/multi.py) never mixes domains' scores: each domain answers its own bucket, in its own
score order; across domains, results compare by `relevance` (domain/relevance.py, recall/relevance.py).

Domains read read models only and never embed on the read path: the query is embedded once by the aggregator
(`DomainQuery.query_vector`), and items are embedded by workers (lazily, from the hit-log).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Connection, Engine

from domain.events.hitlog import HitLayer
from domain.privacy import PrivacyPolicy
from recall.scope import Scope
from recall.timeframe import NOW, TimeFrame


@dataclass(frozen=True)
class DomainQuery:
    scope: Scope
    query: str
    k: int  # this domain's quota: at most k results
    now: datetime
    policy: PrivacyPolicy  # the tenant's privacy gate: an excluded item is never answered
    query_vector: str | None = None  # pgvector literal of the query in the configured model; None: keyword only
    include_history: bool = False  # replaced and retired items too (scored ×0.1)
    options: dict[str, Any] = field(default_factory=dict)  # domain-specific knobs from the request
    frame: TimeFrame = NOW  # since / until (valid time) and as_of (recorded time): recall/timeframe.py


@dataclass(frozen=True)
class DomainHit:
    """One result of a domain. `handle` identifies it for the drill and the hit-log (a memory's is its id)."""

    content: str
    score: float  # comparable within its domain only
    handle: dict[str, Any]
    relevance: float = 0.0  # the calibrated chance it answers the query, the same scale in every domain
    legs: dict[str, float | None] = field(default_factory=dict)  # e.g. {"keyword": bm25, "vector": cosine}
    layer: HitLayer = "index"
    memory_id: uuid.UUID | None = None  # the memories domain's results
    fields: dict[str, Any] = field(default_factory=dict)  # what the API answers beside content (kind, path, ...)
    explanation: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DomainAnswer:
    results: list[DomainHit]
    reason: str | None = None  # why the bucket is empty or short: "no data", "abstained: ...", "excluded"
    explanation: dict[str, Any] = field(default_factory=dict)


class RecallDomain(Protocol):
    # Read-only members (properties here): a domain's class attributes satisfy them.
    @property
    def name(self) -> str: ...

    @property
    def read_models(self) -> tuple[str, ...]:
        """The projections its reads wait for to honour a min_position."""
        ...

    @property
    def times(self) -> tuple[str, ...]:
        """The times it keeps: "valid" (it filters by since / until), "recorded" (it answers as_of). Asked for a
        time it does not keep, it answers nothing (the aggregator says why), never something out of range."""
        ...

    def has_data(self, conn: Connection, scope: Scope) -> bool:
        """Whether the scope holds anything this domain could answer (the default fan-out asks only these)."""
        ...

    def search(self, engine: Engine, q: DomainQuery) -> DomainAnswer:
        """The domain's top q.k for the query, in its own score order, none the policy excludes. Read-only."""
        ...

    def fetch(self, conn: Connection, scope: Scope, handle: dict[str, Any], policy: PrivacyPolicy) -> Any:
        """The exact item a handle names (the drill), or None when it is unknown or excluded."""
        ...


__all__ = ["DomainAnswer", "DomainHit", "DomainQuery", "RecallDomain"]
