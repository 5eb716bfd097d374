"""Stage 4, pseudo-relevance feedback (Rocchio) and the entity boost. Recall-only: they reorder the pool the
composite kept, they never add a candidate, and the reranker still arbitrates.

Rocchio on the query vector: q' = q + β·c, c the centroid of the top `prf_top` memories' vectors (by
composite). Each pool memory's cosine to q' (computed from its cosines to q and to c, and c's to q, all in
PostgreSQL) replaces its cosine in the one fusion function; the composite is recomputed with the same
quality factor. Memories without a vector keep their BM25-only relevance. Skipped when the pool's best cosine
is under the candidate floor: feeding back from irrelevant memories would only amplify noise.

Entity boost: when the query names entities (domain.entities), each memory's score is multiplied by
1 − w + w·(share of those entities it is about), w = ENGRAMLOG_ENTITY_WEIGHT: memories about whom or what the
query asks about move up relative to the others. "About" is `entities.holds`: an utterance is about its speaker
(or, in the second person, its addressee) — "Thanks, Caroline!" said by Melanie is not about Caroline — and
any other memory, or an entity that does not speak in the pool, about what it mentions.
"""

from __future__ import annotations

import math

from sqlalchemy import Connection

from domain.entities import entities, holds, speakers_of, words
from infra.settings import Settings
from recall.funnel.composite import relevance, rescore
from recall.funnel.types import Item, StageReport, rank
from recall.vector import prf_cosines


def feedback(conn: Connection, tenant: str, query: str, query_vector: str, pool: list[Item], settings: Settings,
             report: StageReport) -> list[Item]:
    report.config = {"prf_top": settings.funnel.prf_top, "prf_beta": settings.funnel.prf_beta,
                     "entity_weight": settings.funnel.entity_weight}
    report.counts = {"pool": len(pool), "rocchio": 0, "entity_boosted": 0}
    skipped = []
    beta = settings.funnel.prf_beta
    best_cosine = max((i.cosine for i in pool if i.cosine is not None), default=None)
    if not pool or settings.funnel.prf_top <= 0 or beta <= 0:
        skipped.append("Rocchio off (ENGRAMLOG_PRF_TOP or ENGRAMLOG_PRF_BETA is 0)")
    elif best_cosine is None or best_cosine < settings.funnel.sim_candidate_floor:
        skipped.append("Rocchio skipped: no memory in the pool reaches the candidate floor")
    else:
        top = [i.memory_id for i in pool[: settings.funnel.prf_top]]
        to_centroid, centroid_to_query = prf_cosines(conn, tenant, top, [i.memory_id for i in pool], query_vector,
                                                     settings.embedding.embedding_model)
        if centroid_to_query is None:
            skipped.append("Rocchio skipped: the top memories have no vectors")
        else:
            norm = math.sqrt(1 + beta * beta + 2 * beta * centroid_to_query)
            expanded = {}
            for item in pool:
                if item.cosine is not None and item.memory_id in to_centroid:
                    expanded[item.memory_id] = (item.cosine + beta * to_centroid[item.memory_id]) / norm
            relevance(pool, settings, expanded)
            for item in pool:
                item.score = rescore(item, settings)
                item.stages["prf"] = {"cosine_expanded": round(expanded[item.memory_id], 6)
                                      if item.memory_id in expanded else None,
                                      "relevance": round(item.relevance, 6), "score": round(item.score, 6)}
            report.counts["rocchio"] = len(expanded)
            report.notes["centroid_to_query"] = round(centroid_to_query, 6)

    named = entities(query)
    if not named or settings.funnel.entity_weight <= 0:
        skipped.append("entity boost: the query names no entity" if not named else "entity boost off")
    else:
        w = settings.funnel.entity_weight
        speakers = speakers_of(i.content for i in pool)
        for item in pool:
            text_words = words(item.content)
            share = sum(1 for e in named if holds(item.content, text_words, e, speakers)) / len(named)
            factor = 1 - w + w * share
            item.score *= factor
            item.stages.setdefault("prf", {}).update({"entity_share": round(share, 4), "score": round(item.score, 6)})
            report.counts["entity_boosted"] += share > 0
        report.notes["entities"] = named
    if skipped:
        report.notes["skipped"] = skipped
    return rank(pool)
