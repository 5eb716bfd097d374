"""Stage 3, composite score: a relevance-gated blend. Relevance is the one fusion function
(domain.ranking.fuse: 0.6·cosine + 0.4·min-max BM25, a missing vector renormalised to the BM25 leg); every
other signal multiplies it through a quality factor, so popularity can never override irrelevance:

    composite = relevance × q × (superseded_factor if the memory is superseded, else 1) × (1 − p · asked)
    q = 1 − W + Σ wᵢ·sᵢ,   W = Σ wᵢ,   every sᵢ in [0, 1]  →  q in [1 − W, 1]

signals sᵢ (weights: ENGRAMLOG_W_*):
- activation: ACT-R, domain.activation.normalised_activation(n, age, d) from memory_activity (n accesses, age
  since the last access or, never accessed, since recorded), d = ENGRAMLOG_ACTR_DECAY, at the recall's clock;
  under as_of from memory_activity_versions at the position, the clock its recorded time (recall/timeframe.py);
- hebbian: the Hebbian edge weight from this memory to the other candidates (decayed at the clock),
  over the Hebbian cap, clipped to 1 — co-used memories lift each other;
- centrality: weighted degree over every association edge, saturating: deg / (deg + 3);
- confidence: memories.confidence;
- feedback: (used + 1) / (used + not_useful + 2) from the recall feedback (0.5 with none);
- time, only when the query names a span of time (domain.temporal, read against the request's reference time):
  exp(−days from the span to the memory's occurred_at / ENGRAMLOG_TIME_BOOST_DAYS), 1 inside the span, 0 with no
  occurred_at. A query that names no time gets no such signal: there is no recency weight.
asked: the share of the memory's terms in its questions (domain.entities.question_share), p =
ENGRAMLOG_QUESTION_PENALTY: a question does not answer one, the reply to it does.
The top max(k · topn_mult, rerank pool) by composite go on to PRF and the graph walk (never fewer than the
reranker is to see).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from datetime import datetime

from sqlalchemy import Connection

from domain.activation import age_hours, normalised_activation
from domain.entities import question_share
from domain.hebbian import HEBBIAN_CAP
from domain.ranking import Candidate, fuse
from domain.temporal import TimeTarget
from infra.settings import Settings
from recall.edges import neighbours
from recall.funnel.rerank import pool_size
from recall.funnel.types import Item, StageReport, rank

CENTRALITY_HALF = 3.0  # weighted degree at which centrality is 0.5



def weights(settings: Settings, timed: bool = False) -> dict[str, float]:
    """The signals' weights; `timed`: the query names a span of time, so the time signal counts too."""
    w = {"activation": settings.funnel.composite_w_activation, "hebbian": settings.funnel.composite_w_hebbian,
         "centrality": settings.funnel.composite_w_centrality, "confidence": settings.funnel.composite_w_confidence,
         "feedback": settings.funnel.composite_w_feedback}
    return {**w, "time": settings.funnel.composite_w_time} if timed else w


def closeness(when: TimeTarget, occurred_at: datetime | None, settings: Settings) -> float:
    """The time signal: 1 inside the span, decaying with the days outside it; 0 with no occurred_at."""
    if occurred_at is None:
        return 0.0
    return math.exp(-when.distance_days(occurred_at) / settings.funnel.time_boost_days)


def relevance(items: list[Item], settings: Settings, cosine: Mapping[uuid.UUID, float | None] | None = None) -> None:
    """Set each item's relevance with the one fusion function (no threshold: candidates are already eligible).
    `cosine` replaces the items' cosines (PRF uses it); BM25 is min-max normalised over `items`."""
    cands = [Candidate(i.memory_id, i.bm25, i.cosine if cosine is None else cosine.get(i.memory_id, i.cosine))
             for i in items]
    by_id = {i.memory_id: i for i in items}
    for s in fuse(cands, settings.hybrid.weight_vector, settings.hybrid.weight_keyword, float("-inf")):
        item = by_id[s.memory_id]
        item.relevance = s.score
        item.stages.setdefault("relevance", {}).update({
            "bm25_normalised": round(s.bm25_normalised, 6), "weight_vector": s.weight_vector,
            "weight_keyword": s.weight_keyword})


def quality(item: Item, settings: Settings) -> float:
    """q = 1 − W + Σ wᵢ·sᵢ over the item's recorded signals."""
    signals = item.stages["composite"]["signals"]
    w = weights(settings, "time" in signals)
    return 1 - sum(w.values()) + sum(w[name] * signals[name] for name in w)


def question_factor(item: Item, settings: Settings) -> float:
    """1 − ENGRAMLOG_QUESTION_PENALTY × the item's question share: what asking costs its score."""
    return 1 - settings.funnel.question_penalty * item.stages.get("composite", {}).get("question_share", 0.0)


def unasked(item: Item, settings: Settings) -> float:
    """The item's score without its question factor: how well it matches the query, asking or not."""
    factor = question_factor(item, settings)
    return item.score / factor if factor > 0 else item.score


def rescore(item: Item, settings: Settings) -> float:
    """relevance × quality × status factor × question factor: the composite for the item's current relevance."""
    factor = settings.funnel.superseded_factor if item.status == "superseded" else 1.0
    return max(0.0, item.relevance) * item.stages["composite"]["quality"] * factor * question_factor(item, settings)


def score(conn: Connection, tenant: str, items: dict[uuid.UUID, Item], k: int, now: datetime,
          settings: Settings, report: StageReport, when: TimeTarget | None = None) -> list[Item]:
    """Score every candidate; answer the top k · topn_mult, best first. `when`: the span the query names. Each
    item's activity was read with its row, as of the frame (candidates.py); under as_of, `now` is that position's
    recorded time."""
    pool = list(items.values())
    relevance(pool, settings)
    ids = list(items)
    degree: dict[uuid.UUID, float] = {}
    hebbian: dict[uuid.UUID, float] = {}
    for edge in neighbours(conn, tenant, ids, now):
        degree[edge.memory_id] = degree.get(edge.memory_id, 0.0) + min(edge.weight, 1.0)
        if edge.kind == "hebbian" and edge.neighbour_id in items:
            hebbian[edge.memory_id] = hebbian.get(edge.memory_id, 0.0) + edge.weight
    w = weights(settings, when is not None)
    for item in pool:
        act = item.activity  # read with the candidates' rows, as of the frame
        n = act.access_count if act else 0
        recorded = item.recorded_at or now
        age = age_hours(now, act.last_access_at if act else None, recorded)
        used, not_useful = (act.used_count, act.not_useful_count) if act else (0, 0)
        deg = degree.get(item.memory_id, 0.0)
        signals = {
            "activation": normalised_activation(n, age, settings.lifecycle.actr_decay),
            "hebbian": min(1.0, hebbian.get(item.memory_id, 0.0) / HEBBIAN_CAP),
            "centrality": deg / (deg + CENTRALITY_HALF),
            "confidence": min(1.0, max(0.0, item.confidence)),
            "feedback": (used + 1) / (used + not_useful + 2),
        }
        if when is not None:
            signals["time"] = closeness(when, item.occurred_at, settings)
        item.stages["composite"] = {"relevance": round(item.relevance, 6),
                                    "signals": {k_: round(v, 6) for k_, v in signals.items()},
                                    "inputs": {"access_count": n, "age_hours": round(age, 3), "used": used,
                                               "not_useful": not_useful, "degree": round(deg, 4)}}
        item.stages["composite"]["quality"] = round(quality(item, settings), 6)
        if settings.funnel.question_penalty and (asked := question_share(item.content)):
            item.stages["composite"]["question_share"] = round(asked, 6)
        item.score = rescore(item, settings)
        item.stages["composite"]["score"] = round(item.score, 6)
        if item.status == "superseded":
            item.stages["composite"]["superseded_factor"] = settings.funnel.superseded_factor
    ranked = rank(pool)
    top_n = max(k * settings.funnel.topn_mult, pool_size(k, settings))
    kept = ranked[:top_n]
    report.config = {"weights": w, "top_n": top_n, "actr_decay": settings.lifecycle.actr_decay,
                     "superseded_factor": settings.funnel.superseded_factor,
                     "question_penalty": settings.funnel.question_penalty, "clock": now.isoformat()}
    if when is not None:
        report.config["time"] = {**when.as_dict(), "days": settings.funnel.time_boost_days}
    report.counts = {"scored": len(pool), "kept": len(kept), "cut": len(pool) - len(kept),
                     "with_activity": sum(1 for i in pool if i.activity is not None), "with_edges": len(degree)}
    return kept
