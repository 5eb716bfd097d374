"""fuse(): 0.6 · cosine (absolute) + 0.4 · min-max BM25; no vector → BM25 leg at weight 1; threshold; order."""

from __future__ import annotations

import itertools
import random
import uuid

import pytest

from domain.ranking import Candidate, fuse

WV, WK = 0.6, 0.4


def mid(i: int) -> uuid.UUID:
    return uuid.UUID(int=i)


def by_id(scored):
    return {s.memory_id: s for s in scored}


def test_cosine_leg_stays_absolute():
    # No keyword leg at all: a min-max on cosine would turn 0.5/0.3 into 1/0; absolute keeps 0.6·cos.
    out = by_id(fuse([Candidate(mid(1), None, 0.5), Candidate(mid(2), None, 0.3)], WV, WK, 0.0))
    assert out[mid(1)].score == pytest.approx(0.30)
    assert out[mid(2)].score == pytest.approx(0.18)
    assert out[mid(1)].cosine == 0.5 and out[mid(1)].weight_vector == WV and out[mid(1)].weight_keyword == WK


def test_bm25_is_min_max_normalised_over_the_candidates():
    cands = [Candidate(mid(1), None, 0.2), Candidate(mid(2), 2.0, 0.2), Candidate(mid(3), 4.0, 0.2),
             Candidate(mid(4), 9.5, 0.2)]
    out = by_id(fuse(cands, WV, WK, 0.0))
    # The candidate absent from the keyword leg is the minimum (0); the best BM25 is the maximum (1).
    assert out[mid(1)].bm25_normalised == pytest.approx(0.0)
    assert out[mid(2)].bm25_normalised == pytest.approx(2.0 / 9.5)
    assert out[mid(3)].bm25_normalised == pytest.approx(4.0 / 9.5)
    assert out[mid(4)].bm25_normalised == pytest.approx(1.0)
    for i in (1, 2, 3, 4):
        s = out[mid(i)]
        assert s.score == pytest.approx(WV * 0.2 + WK * s.bm25_normalised)
        assert s.bm25 == cands[i - 1].bm25  # the raw BM25 is kept for the explanation


def test_bm25_normalisation_is_scale_free():
    # Multiplying every BM25 by a constant (a different corpus size) changes nothing in the fused scores.
    base = [Candidate(mid(i), float(i), 0.1 * i) for i in range(1, 6)] + [Candidate(mid(9), None, 0.9)]
    scaled = [Candidate(c.memory_id, None if c.bm25 is None else c.bm25 * 37.0, c.cosine) for c in base]
    a, b = fuse(base, WV, WK, 0.0), fuse(scaled, WV, WK, 0.0)
    assert [s.memory_id for s in a] == [s.memory_id for s in b]
    assert [s.score for s in a] == pytest.approx([s.score for s in b])


def test_bm25_range_always_includes_zero():
    # Documented rule: a candidate missing from the keyword leg scores 0 there, so 0 belongs to the range.
    out = by_id(fuse([Candidate(mid(1), 2.0, 0.5), Candidate(mid(2), 8.0, 0.5)], WV, WK, 0.0))
    assert out[mid(1)].bm25_normalised == pytest.approx(0.25)
    assert out[mid(2)].bm25_normalised == pytest.approx(1.0)


def test_single_keyword_candidate_normalises_to_one():
    (only,) = fuse([Candidate(mid(1), 3.3, None)], WV, WK, 0.0)
    assert only.bm25_normalised == pytest.approx(1.0)
    assert only.score == pytest.approx(1.0)


def test_candidate_without_vector_gets_keyword_leg_at_weight_one():
    cands = [Candidate(mid(1), 10.0, None), Candidate(mid(2), 5.0, None), Candidate(mid(3), 10.0, 0.9)]
    out = by_id(fuse(cands, WV, WK, 0.0))
    assert out[mid(1)].score == pytest.approx(1.0)  # not 0.4 · 1.0, and never 0
    assert out[mid(1)].weight_vector == 0.0 and out[mid(1)].weight_keyword == 1.0
    assert out[mid(2)].score == pytest.approx(0.5)
    assert out[mid(2)].score > 0
    assert out[mid(3)].score == pytest.approx(WV * 0.9 + WK * 1.0)
    assert out[mid(3)].weight_vector == WV and out[mid(3)].weight_keyword == WK


def test_vectorless_candidate_is_not_dropped_by_threshold_for_lack_of_a_vector():
    (s,) = fuse([Candidate(mid(1), 1.0, None)], WV, WK, 0.10)
    assert s.memory_id == mid(1) and s.score > 0.10


def test_threshold_drops_low_scores_and_keeps_equal_ones():
    cands = [Candidate(mid(1), None, 0.1), Candidate(mid(2), None, 0.5), Candidate(mid(3), None, 0.25)]
    # Scores: 0.06, 0.30, 0.15.
    kept = fuse(cands, WV, WK, 0.10)
    assert [s.memory_id for s in kept] == [mid(2), mid(3)]
    assert all(s.score >= 0.10 for s in kept)
    assert [s.memory_id for s in fuse(cands, WV, WK, 0.15)] == [mid(2), mid(3)]  # equal to threshold: kept
    assert fuse(cands, WV, WK, 0.31) == []


def test_negative_cosine_is_kept_absolute_and_can_fall_below_threshold():
    out = fuse([Candidate(mid(1), None, -0.4), Candidate(mid(2), 4.0, -0.4)], WV, WK, -1.0)
    scores = by_id(out)
    assert scores[mid(1)].score == pytest.approx(WV * -0.4)
    assert scores[mid(2)].score == pytest.approx(WV * -0.4 + WK * 1.0)
    assert [s.memory_id for s in fuse([Candidate(mid(1), None, -0.4)], WV, WK, 0.0)] == []


def test_best_first_and_ties_broken_by_id_deterministically():
    cands = [Candidate(mid(i), 4.0 if i % 2 else 2.0, 0.5) for i in range(1, 21)]
    expected = fuse(cands, WV, WK, 0.0)
    scores = [s.score for s in expected]
    assert scores == sorted(scores, reverse=True)
    # Within equal scores, ascending id.
    for a, b in itertools.pairwise(expected):
        if a.score == b.score:
            assert str(a.memory_id) < str(b.memory_id)
    rng = random.Random(7)
    for _ in range(20):
        shuffled = cands[:]
        rng.shuffle(shuffled)
        assert fuse(shuffled, WV, WK, 0.0) == expected


def test_empty_candidates():
    assert fuse([], WV, WK, 0.0) == []


def test_weights_are_parameters():
    (s,) = fuse([Candidate(mid(1), 2.0, 0.5)], 0.3, 0.7, 0.0)
    assert s.score == pytest.approx(0.3 * 0.5 + 0.7 * 1.0)
