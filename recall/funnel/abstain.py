"""Stage 7, the abstention gate, judged on the post-rerank top K (ENGRAMLOG_ABSTAIN_GATE_K, 5): recall says
nothing rather than something wrong when its channels do not agree that anything there is relevant.

Channels (each votes relevant or not; a channel with nothing to judge is absent):
- vector: the best cosine to the query in the top K ≥ ENGRAMLOG_ABSTAIN_SIM_FLOOR;
- keyword: the share of the query's distinct terms (the BM25 tokenizer's) that the top K's memories contain
  ≥ ENGRAMLOG_ABSTAIN_TERM_FLOOR (absent when the query has no terms, e.g. only stop-words);
- agreement: some top-K memory was found by both legs (a BM25 match with a cosine ≥ the candidate floor);
  absent while no top-K memory has its vector yet (just written: read-your-writes does not wait for vectors);
- entity: when the query names entities, the top-K memories that best answer the rest of the query (those
  whose statements — questions left out: a question does not answer one — share at least
  ENGRAMLOG_ABSTAIN_ENTITY_FRAC of the best share of its other terms; with no term in common, those with a
  cosine ≥ the vector floor, or no vector yet) must include one about a named entity: an utterance
  ("Caroline: ...") is about its speaker, or, when it speaks mostly in the second person, about the one it
  addresses; any other memory about every entity it mentions. A question about what Bob did is not
  answered by what Alice did on the same topic (domain.entities). With ENGRAMLOG_ABSTAIN_ENTITY_TOP m > 0, one
  of the first m of the top K must also be about a named entity: Bob's reply further down that shares the
  topic's words does not answer what Alice did;
- relevance: the best calibrated relevance in the top K (recall/relevance.py, the scale every domain shares)
  ≥ ENGRAMLOG_ABSTAIN_RELEVANCE_FLOOR (0 leaves the channel out);
- cross_encoder: when the reranker ran, its best score in the top K ≥ ENGRAMLOG_ABSTAIN_CE_FLOOR.
Verdict: abstain when the share of present channels voting relevant is under ENGRAMLOG_ABSTAIN_QUORUM (0.5),
or when a channel listed in ENGRAMLOG_ABSTAIN_VETO (default: entity) votes not relevant. Pool width and the
gate are independent dials: a lone distractor deep in the pool cannot keep the gate open or shut.
"""

from __future__ import annotations

from typing import Any

from domain.entities import entities, holds, speakers_of, statements, words
from domain.memo import per_text
from domain.text import tokenize
from infra.settings import Settings
from recall.funnel.types import Item, StageReport


# A memory's terms, and those of its statements, kept by its content's digest: the gate reads the same top
# memories on query after query, and tokenizing a long text costs more than the rest of the gate.
@per_text()
def content_terms(content: str) -> frozenset[str]:
    return frozenset(tokenize(content))


@per_text()
def statement_terms(content: str) -> frozenset[str]:
    return frozenset(tokenize(statements(content)))


def judge(query: str, ranked: list[Item], reranked: bool, settings: Settings,
          report: StageReport) -> dict[str, Any] | None:
    """None when the gate lets the results through; else {reason, channels}."""
    k = settings.abstention.abstain_gate_k
    top = ranked[:k]
    report.config = {"gate_k": k, "sim_floor": settings.abstention.abstain_sim_floor,
                     "term_floor": settings.abstention.abstain_term_floor,
                     "ce_floor": settings.abstention.abstain_ce_floor,
                     "relevance_floor": settings.abstention.abstain_relevance_floor,
                     "entity_frac": settings.abstention.abstain_entity_frac,
                     "entity_top": settings.abstention.abstain_entity_top,
                     "quorum": settings.abstention.abstain_quorum,
                     "veto": list(settings.abstention.abstain_veto)}
    channels: dict[str, dict[str, Any]] = {}
    if not top:
        reason = "no candidate passed candidate generation"
        report.counts = {"judged": 0, "abstained": True}
        report.notes = {"reason": reason}
        return {"reason": reason, "channels": channels}

    best_cosine = max((i.cosine for i in top if i.cosine is not None), default=None)
    if best_cosine is not None:
        channels["vector"] = {"value": round(best_cosine, 6), "floor": settings.abstention.abstain_sim_floor,
                              "relevant": best_cosine >= settings.abstention.abstain_sim_floor}
    terms = set(tokenize(query))
    if terms:
        found: set[str] = set()
        for item in top:
            found |= terms & content_terms(item.content)
        share = len(found) / len(terms)
        channels["keyword"] = {"value": round(share, 4), "floor": settings.abstention.abstain_term_floor,
                               "matched": sorted(found), "terms": sorted(terms),
                               "relevant": share >= settings.abstention.abstain_term_floor}
    if best_cosine is not None:  # no vector in the top K yet (just written): the legs cannot agree or disagree
        both = [i for i in top
                if i.bm25 is not None and i.cosine is not None and i.cosine >= settings.funnel.sim_candidate_floor]
        channels["agreement"] = {"value": len(both), "relevant": bool(both)}
    named = entities(query)
    if named:
        channels["entity"] = _entity_channel(named, terms, top, settings)
    if settings.abstention.abstain_relevance_floor > 0:
        best_relevance = max(i.calibrated for i in top)
        channels["relevance"] = {"value": round(best_relevance, 6),
                                 "floor": settings.abstention.abstain_relevance_floor,
                                 "relevant": best_relevance >= settings.abstention.abstain_relevance_floor}
    if reranked:
        best_ce = max(i.stages["rerank"]["ce"] for i in top)
        channels["cross_encoder"] = {"value": round(best_ce, 6), "floor": settings.abstention.abstain_ce_floor,
                                     "relevant": best_ce >= settings.abstention.abstain_ce_floor}

    votes = sum(1 for c in channels.values() if c["relevant"])
    share = votes / len(channels)
    vetoed = [name for name in settings.abstention.abstain_veto if name in channels and not channels[name]["relevant"]]
    report.counts = {"judged": len(top), "channels": len(channels), "relevant_votes": votes}
    verdict: dict[str, Any] | None = None
    if vetoed:
        verdict = {"reason": f"vetoed by {', '.join(vetoed)}: " + "; ".join(_why(n, channels[n]) for n in vetoed),
                   "channels": channels}
    elif share < settings.abstention.abstain_quorum:
        against = [n for n, c in channels.items() if not c["relevant"]]
        verdict = {"reason": f"{votes} of {len(channels)} channels find the top {len(top)} relevant (quorum "
                             f"{settings.abstention.abstain_quorum:g}): "
                             + "; ".join(_why(n, channels[n]) for n in against),
                   "channels": channels}
    report.counts["abstained"] = verdict is not None
    # each channel's value beside its vote: what a threshold would be chosen on (bench/locomo_folds.py, out of fold)
    report.notes = {"channels": {n: c["relevant"] for n, c in channels.items()},
                    "values": {n: c["value"] for n, c in channels.items()}}
    if verdict:
        report.notes["reason"] = verdict["reason"]
    return verdict


def _entity_channel(named: list[str], terms: set[str], top: list[Item], settings: Settings) -> dict[str, Any]:
    """Is a memory that answers the rest of the query about the entity the query names?"""
    rest = terms - set(tokenize(" ".join(named)))
    if rest:
        shares = [(len(rest & statement_terms(i.content)) / len(rest), i) for i in top]
        best = max(share for share, _ in shares)
        if best > 0:
            answering = [i for share, i in shares if share >= settings.abstention.abstain_entity_frac * best]
        else:  # no term in common: the memories close in meaning answer it (one without its vector yet may)
            answering = [i for i in top if i.cosine is None or i.cosine >= settings.abstention.abstain_sim_floor]
    else:
        best, answering = 1.0, top
    speakers = speakers_of(i.content for i in top)

    def about_named(item: Item) -> bool:
        return any(holds(item.content, words(item.content), e, speakers) for e in named)

    grounded = [str(i.memory_id) for i in answering if about_named(i)]
    leading = settings.abstention.abstain_entity_top
    channel = {"value": len(grounded), "entities": named, "answering": len(answering),
               "best_rest_share": round(best, 4), "relevant": bool(grounded)}
    if leading > 0:  # a named person's memory among the first `leading`, not only somewhere in the top K
        led = any(about_named(i) for i in top[:leading])
        channel.update(leading=leading, led=led, relevant=bool(grounded) and led)
    return channel


def _why(name: str, channel: dict[str, Any]) -> str:
    if name == "vector":
        return f"best cosine {channel['value']:.3f} < {channel['floor']:g}"
    if name == "keyword":
        return f"{channel['value']:.0%} of the query's terms matched < {channel['floor']:.0%}"
    if name == "agreement":
        return "no memory found by both the keyword and the vector leg"
    if name == "entity":
        who = " or ".join(channel["entities"])
        if channel["value"] and not channel.get("led", True):
            return f"none of the first {channel['leading']} memories is about {who}"
        return f"none of the {channel['answering']} memories that best answer the rest of the query is about {who}"
    if name == "relevance":
        return f"best calibrated relevance {channel['value']:.3f} < {channel['floor']:g}"
    if name == "cross_encoder":
        return f"best cross-encoder score {channel['value']:.3f} < {channel['floor']:g}"
    return name
