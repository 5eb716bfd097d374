"""recall/hybrid.py, the hybrid leg knowledge, transcripts and code share: fusion of the two legs (an item without
a vector on its BM25 leg renormalised to weight 1), the history factor, what the hit-log says of each hit, the
bucket's reason."""

from __future__ import annotations

import uuid

import pytest

from domain.privacy import PrivacyPolicy
from infra.settings import Settings, replace
from readmodels.postings import Postings
from recall.domains.base import DomainHit, DomainQuery
from recall.hybrid import HISTORY_FACTOR, HybridLeg, Legs, answer, pool_size, scored
from recall.keyword import KeywordTables
from recall.scope import Scope
from recall.vector import VectorTable

KEYWORD = KeywordTables(Postings("p", "t", "s", "item_id", "b"), "d", "d.status = ANY(:statuses)")
VECTORS = VectorTable("v", "item_id", "d.status = ANY(:statuses)", scoped_by="d")
HYBRID = HybridLeg(KEYWORD, VECTORS, ("active", "dormant"), ("archived",))
KEYWORD_ONLY = HybridLeg(KEYWORD, None, ("active", "dormant"), ("archived",))


def settings(**changes: object) -> Settings:
    return replace(Settings(), **{"weight_vector": 0.6, "weight_keyword": 0.4, "score_threshold": 0.0,
                                  "candidates_per_leg": 50, **changes})


def uid(i: int) -> uuid.UUID:
    return uuid.UUID(int=i)


def test_an_item_without_a_vector_is_scored_on_its_bm25_leg_at_weight_one() -> None:
    legs = Legs({uid(1): 4.0, uid(2): 2.0}, {uid(1): 0.5})
    out = {f.id: f for f in scored(legs, legs.ids, HYBRID, lambda _: "active", settings())}
    assert out[uid(1)].score == pytest.approx(0.6 * 0.5 + 0.4 * 1.0)
    assert out[uid(2)].score == pytest.approx(0.5)  # 2 / 4 min-max, renormalised to weight 1, never 0.4 · 0.5
    assert out[uid(2)].explanation == {"bm25_normalised": pytest.approx(0.5), "weight_vector": 0.0,
                                       "weight_keyword": 1.0, "history_factor": 1.0}
    assert out[uid(2)].legs == {"keyword": 2.0, "vector": None}
    assert out[uid(1)].legs == {"keyword": 4.0, "vector": 0.5}


def test_a_vector_only_candidate_keeps_its_absolute_cosine() -> None:
    legs = Legs({uid(1): 3.0}, {uid(2): 0.7})
    assert legs.ids == [uid(1), uid(2)]
    out = {f.id: f for f in scored(legs, legs.ids, HYBRID, lambda _: "active", settings())}
    assert out[uid(2)].score == pytest.approx(0.6 * 0.7)  # BM25 absent: 0 in the range
    assert out[uid(2)].legs == {"keyword": None, "vector": 0.7}


def test_history_statuses_are_scored_a_tenth_after_the_threshold() -> None:
    legs = Legs({uid(1): 4.0, uid(2): 4.0})
    status = {uid(1): "archived", uid(2): "dormant"}
    out = {f.id: f for f in scored(legs, legs.ids, HYBRID, status.__getitem__, settings(score_threshold=0.5))}
    assert out[uid(1)].score == pytest.approx(HISTORY_FACTOR) and out[uid(1)].history_factor == HISTORY_FACTOR
    assert out[uid(2)].score == pytest.approx(1.0) and out[uid(2)].history_factor == 1.0
    assert out[uid(1)].scored.score == pytest.approx(1.0)  # the threshold saw the fused score


def test_the_threshold_drops_and_only_allowed_candidates_are_fused() -> None:
    legs = Legs({uid(1): 10.0, uid(2): 0.5, uid(3): 20.0})
    out = scored(legs, [uid(1), uid(2)], HYBRID, lambda _: "active", settings(score_threshold=0.1))
    # uid(3) is gated out, so it does not set the BM25 range either: uid(1) is the maximum.
    assert [f.id for f in out] == [uid(1)]
    assert out[0].score == pytest.approx(1.0)


def test_keyword_only_leg_says_only_its_keyword_leg() -> None:
    legs = Legs({uid(1): 2.0})
    [f] = scored(legs, legs.ids, KEYWORD_ONLY, lambda _: "active", settings())
    assert f.legs == {"keyword": 2.0}
    assert f.explanation == {"bm25_normalised": 1.0, "history_factor": 1.0}


def test_statuses_and_pool_size() -> None:
    assert HYBRID.statuses(False) == ("active", "dormant")
    assert HYBRID.statuses(True) == ("active", "dormant", "archived")
    q = DomainQuery(Scope("t"), "x", 30, None, PrivacyPolicy())  # type: ignore[arg-type]
    gated = DomainQuery(Scope("t"), "x", 10, None, PrivacyPolicy(exclude_paths=("secret/*",)))  # type: ignore[arg-type]
    assert pool_size(settings(), q, gated_per_item=True) == 90
    assert pool_size(settings(), gated, gated_per_item=True) == 100
    assert pool_size(settings(), gated, gated_per_item=False) == 50


def test_answer_says_why_a_bucket_is_empty() -> None:
    hit = DomainHit(content="c", score=1.0, handle={})
    assert answer([hit, hit, hit], 2, 5, 5).results == [hit, hit]
    assert answer([], 2, 5, 3).reason == "excluded"
    assert answer([], 2, 5, 5).reason == "below threshold"
    assert answer([], 2, 5, 3).explanation == {"candidates": 5, "gated": 2}
