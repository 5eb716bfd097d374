"""LoCoMo's scoring (bench/locomo.py): the ranking metrics over returned dia_ids, their micro-average, the run's
summary by category and abstention, and the funnel attribution of each gold memory. Pure: unit-tested on toy
examples in tests/unit/test_bench_locomo.py and tests/unit/test_funnel_entities.py."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from bench.common import percentile
from bench.locomo_data import ABSTAIN_CATEGORY, SCORED_CATEGORIES

CUTOFFS = (1, 5, 10)


def dedupe(ranked: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ranked))  # first occurrences, in order


def recall_at(ranked: Sequence[str], relevant: Sequence[str], k: int) -> float:
    """Share of the relevant ids found in the top k."""
    if not relevant:
        return 0.0
    top = set(dedupe(ranked)[:k])
    return sum(1 for r in set(relevant) if r in top) / len(set(relevant))


def hit_at(ranked: Sequence[str], relevant: Sequence[str], k: int) -> float:
    """1 when any relevant id is in the top k."""
    rel = set(relevant)
    return 1.0 if any(r in rel for r in dedupe(ranked)[:k]) else 0.0


def mrr_at(ranked: Sequence[str], relevant: Sequence[str], k: int = 10) -> float:
    """Reciprocal rank of the first relevant id within the top k (0 when none)."""
    rel = set(relevant)
    for rank, item in enumerate(dedupe(ranked)[:k], start=1):
        if item in rel:
            return 1.0 / rank
    return 0.0


def ndcg_at(ranked: Sequence[str], relevant: Sequence[str], k: int = 10) -> float:
    """Binary-relevance nDCG@k: DCG of the ranking over the DCG of an ideal one with every relevant id first."""
    rel = set(relevant)
    if not rel:
        return 0.0
    dcg = sum(1.0 / math.log2(rank + 1) for rank, item in enumerate(dedupe(ranked)[:k], start=1) if item in rel)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(rel), k) + 1))
    return dcg / ideal


def score_question(ranked: Sequence[str], relevant: Sequence[str]) -> dict[str, float]:
    scores = {}
    for k in CUTOFFS:
        scores[f"r@{k}"] = recall_at(ranked, relevant, k)
    for k in CUTOFFS:
        scores[f"hit@{k}"] = hit_at(ranked, relevant, k)
    scores["mrr@10"] = mrr_at(ranked, relevant, 10)
    scores["ndcg@10"] = ndcg_at(ranked, relevant, 10)
    return scores


METRICS = ("r@1", "r@5", "r@10", "hit@1", "hit@5", "hit@10", "mrr@10", "ndcg@10")
LABELS = {"r@1": "R@1", "r@5": "R@5", "r@10": "R@10", "hit@1": "hit@1", "hit@5": "hit@5", "hit@10": "hit@10",
          "mrr@10": "MRR@10", "ndcg@10": "nDCG@10"}


def aggregate(scores: Sequence[dict[str, float]]) -> dict[str, float]:
    """Micro-average: the mean of each metric over questions, and their count."""
    out: dict[str, float] = {"n": len(scores)}
    for metric in METRICS:
        out[metric] = sum(s[metric] for s in scores) / len(scores) if scores else 0.0
    return out


ATTRIBUTION_STAGES = ("found", "abstained", "cut_at_rerank", "cut_by_composite", "never_candidate", "not_kept")
STAGE_LABELS = {"found": "found (top k)", "abstained": "abstained", "cut_at_rerank": "cut at rerank",
                "cut_by_composite": "cut by the composite", "never_candidate": "never a candidate",
                "not_kept": "not kept (salience gate)"}


def locate(memory_id: str | None, trace: dict[str, Sequence[str]], returned: Sequence[str]) -> str:
    """The last funnel stage one gold memory reached (None: the write did not keep it as a memory)."""
    if memory_id is None:
        return "not_kept"
    if memory_id in returned:
        return "found"
    if memory_id in trace.get("ranked", ()):
        return "abstained"
    if memory_id in trace.get("pool", ()):
        return "cut_at_rerank"
    if memory_id in trace.get("candidates", ()):
        return "cut_by_composite"
    return "never_candidate"


def attribute(gold: Sequence[str | None], trace: dict[str, Sequence[str]],
              returned: Sequence[str]) -> tuple[str, list[str]]:
    """(the question's stage: its best-placed gold memory's, each gold memory's stage)."""
    stages = [locate(g, trace, returned) for g in gold]
    if not stages:
        return "never_candidate", []
    return min(stages, key=ATTRIBUTION_STAGES.index), stages


def attribution_totals(per_question: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts and shares per stage, over questions and over gold memories (questions asked with a trace)."""
    traced = [q for q in per_question if "attribution" in q]
    by_question = {s: sum(1 for q in traced if q["attribution"]["stage"] == s) for s in ATTRIBUTION_STAGES}
    items = [s for q in traced for s in q["attribution"]["gold_stages"]]
    by_item = {s: items.count(s) for s in ATTRIBUTION_STAGES}
    n_items = len(items)
    reached_pool = sum(by_item[s] for s in ("found", "abstained", "cut_at_rerank"))
    candidates = n_items - by_item["never_candidate"] - by_item["not_kept"]
    return {
        "questions": len(traced), "by_question": by_question, "gold_memories": n_items, "by_gold_memory": by_item,
        "gold_candidate_share": candidates / n_items if n_items else None,
        "gold_reached_pool_share": reached_pool / n_items if n_items else None,
    }



def summarise(per_question: Sequence[dict[str, Any]]) -> dict[str, Any]:
    scored = [q for q in per_question if "scores" in q]
    by_category = {str(c): aggregate([q["scores"] for q in scored if q["category"] == c])
                   for c in SCORED_CATEGORIES if any(q["category"] == c for q in scored)}
    adversarial = [q for q in per_question if q["category"] == ABSTAIN_CATEGORY]
    abstained = [q for q in adversarial if not q["returned"]]
    top_adv = [q["scores_returned"][0] for q in adversarial if q["scores_returned"]]
    top_scored = [q["scores_returned"][0] for q in scored if q["scores_returned"]]
    wrongly = [q for q in scored if not q["returned"]]
    abstained_by_category = {str(c): _share([q for q in scored if q["category"] == c]) for c in SCORED_CATEGORIES
                             if any(q["category"] == c for q in scored)}
    out = {
        "overall": aggregate([q["scores"] for q in scored]),
        "by_category": by_category,
        "answerable_abstained": {"n": len(scored), "abstained": len(wrongly),
                                 "rate": len(wrongly) / len(scored) if scored else None,
                                 "by_category": abstained_by_category},
        "category_5": {
            "n": len(adversarial), "abstained": len(abstained),
            "abstain_rate": len(abstained) / len(adversarial) if adversarial else None,
            "mean_results": sum(len(q["returned"]) for q in adversarial) / len(adversarial) if adversarial else None,
            "top_score_p50": percentile(top_adv, 50) if top_adv else None,
            "top_score_p50_categories_1_4": percentile(top_scored, 50) if top_scored else None,
        },
    }
    if any("attribution" in q for q in per_question):
        out["attribution"] = attribution_totals(per_question)
    return out


def _share(questions: Sequence[dict[str, Any]]) -> float:
    """Share of `questions` answered with no result (abstained)."""
    return sum(1 for q in questions if not q["returned"]) / len(questions) if questions else 0.0
