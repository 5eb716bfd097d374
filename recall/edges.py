"""How recall reads the `memory_edges` read model (projections/edges.py writes it): a memory's neighbours with
the read-time decay at the recall's clock (domain/hebbian.py `decayed`)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, text

from domain.hebbian import decayed


@dataclass(frozen=True)
class Neighbour:
    memory_id: uuid.UUID  # one of the ids asked about
    neighbour_id: uuid.UUID
    kind: str
    weight: float  # decayed to `now`
    outgoing: bool  # for directed kinds: memory_id → neighbour_id (causal: memory_id supersedes neighbour_id)


# The edges touching :ids (of :kinds; NULL: every kind), as stored. recall/funnel/graph.py reads these rows in
# the graph walk's one statement per depth; `seen_from` turns them into neighbours either way.
EDGES_SQL = """
SELECT source_id, target_id, kind, weight, updated_at FROM memory_edges
WHERE tenant = :tenant AND (source_id = ANY(:ids) OR target_id = ANY(:ids))
  AND (CAST(:kinds AS text[]) IS NULL OR kind = ANY(CAST(:kinds AS text[])))
"""
_NEIGHBOURS = text(EDGES_SQL)


def seen_from(rows: Iterable[Row[Any]], ids: Iterable[uuid.UUID], now: datetime,
              min_weight: float = 0.0) -> list[Neighbour]:
    """`EDGES_SQL` rows as neighbours of `ids`, with read-time decay at `now`, weaker than `min_weight` left out.
    An edge between two of `ids` appears once from each end. Ordered by weight, strongest first."""
    wanted = set(ids)
    out: list[Neighbour] = []
    for r in rows:
        weight = decayed(r.weight, r.updated_at, now, r.kind)
        if weight <= min_weight:
            continue
        if r.source_id in wanted:
            out.append(Neighbour(r.source_id, r.target_id, r.kind, weight, True))
        if r.target_id in wanted:
            out.append(Neighbour(r.target_id, r.source_id, r.kind, weight, False))
    out.sort(key=lambda n: (-n.weight, str(n.memory_id), str(n.neighbour_id), n.kind))
    return out


def neighbours(conn: Connection, tenant: str, ids: Sequence[uuid.UUID], now: datetime,
               kinds: Sequence[str] | None = None, min_weight: float = 0.0) -> list[Neighbour]:
    """Edges touching `ids`, seen from each of them (`seen_from`)."""
    if not ids:
        return []
    wanted = set(ids)
    rows = conn.execute(_NEIGHBOURS, {"tenant": tenant, "ids": list(wanted),
                                      "kinds": list(kinds) if kinds is not None else None})
    return seen_from(rows, wanted, now, min_weight)


__all__ = ["EDGES_SQL", "Neighbour", "neighbours", "seen_from"]
