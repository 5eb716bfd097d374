"""What a recall domain is: the one small interface every domain plugs into the aggregator through.

A domain (memories, knowledge, and later sessions, transcripts, code) owns its read models and answers three
things: whether the scope holds any of its data, a search for a query, and an exact fetch by the handle one of
its results carried (the drill). Its results say what its hit-log entries carry (domain, layer, handle, legs).
The aggregator (recall/multi.py) never mixes domains' scores: each domain answers its own bucket, in its own
score order; across domains, results compare by `relevance` (domain/relevance.py, recall/relevance.py).

Domains read read models only and never embed on the read path: the query is embedded once by the aggregator
(`DomainQuery.query_vector`, computed while the domains' keyword legs run), and items are embedded by workers
(lazily, from the hit-log).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Boolean, Connection, Engine, ScalarSelect, bindparam, column, select, text

from domain.events.hitlog import HitLayer
from domain.privacy import PrivacyPolicy
from recall.scope import Scope
from recall.timeframe import NOW, TimeFrame
from recall.vector import QueryVector


@dataclass(frozen=True)
class DomainQuery:
    scope: Scope
    query: str
    k: int  # this domain's quota: at most k results
    now: datetime
    policy: PrivacyPolicy  # the tenant's privacy gate: an excluded item is never answered
    # The query's vector in the configured model (a pgvector literal, or the embedding still being computed: a search
    # reads it after its keyword leg); None: keyword only
    query_vector: QueryVector | None = None
    include_history: bool = False  # replaced and retired items too (scored ×0.1)
    options: dict[str, Any] = field(default_factory=dict)  # domain-specific knobs from the request
    frame: TimeFrame = NOW  # since / until (valid time) and as_of (recorded time): recall/timeframe.py
    # The caller found the domain's data in the scope at the current recorded time (the aggregator's one check):
    # a search under no as_of need not ask again.
    held: bool = False


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

    @property
    def vector_leg(self) -> bool:
        """Whether its search reads the query's vector (`DomainQuery.query_vector`); a keyword-only domain is asked
        while the query is being embedded."""
        ...

    def data_check(self, scope: Scope, frame: TimeFrame = NOW) -> ScalarSelect[Any]:
        """Whether the scope holds anything this domain could answer, as a `data_check` test (the default fan-out
        asks only the domains that do, all in one statement: `held`)."""
        ...

    def has_data(self, conn: Connection, scope: Scope) -> bool:
        """The data_check asked alone."""
        ...

    def search(self, engine: Engine, q: DomainQuery) -> DomainAnswer:
        """The domain's top q.k for the query, in its own score order, none the policy excludes. Read-only."""
        ...

    def fetch(self, conn: Connection, scope: Scope, handle: dict[str, Any], policy: PrivacyPolicy) -> Any:
        """The exact item a handle names (the drill), or None when it is unknown or excluded."""
        ...


def data_check(sql: str, params: Mapping[str, object]) -> ScalarSelect[Any]:
    """A domain's has-data test (`sql`: a SELECT of one boolean) as a scalar subquery whose parameters are bound
    under names of their own, so that several domains' tests share one statement without their names meeting."""
    named = set(re.findall(r"(?<!:):(\w+)", sql))  # a frame's parameters the test does not use are left out
    bound = text(sql).bindparams(*(bindparam(name, value, unique=True) for name, value in params.items()
                                   if name in named))
    return bound.columns(column("held", Boolean)).scalar_subquery()


def held(conn: Connection, checks: Mapping[str, ScalarSelect[Any]]) -> dict[str, bool]:
    """Each named data_check's answer, all asked in one statement."""
    if not checks:
        return {}
    row = conn.execute(select(*(check.label(name) for name, check in checks.items()))).one()
    return {name: bool(value) for name, value in row._mapping.items()}


__all__ = ["DomainAnswer", "DomainHit", "DomainQuery", "RecallDomain", "data_check", "held"]
