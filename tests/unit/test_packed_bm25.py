"""recall/packed_bm25.py's scoring in numpy: a document's weights summed in the order they came (so two documents
with the same postings tie to the last bit), documents in id order, ids sharing their first eight bytes kept
apart; the best by score, ties by id."""

from __future__ import annotations

import numpy as np

from recall.packed_bm25 import _best, _summed


def _ids(*raw: bytes) -> np.ndarray:
    return np.array(raw, dtype="V16")


def test_weights_are_summed_per_document_in_the_order_they_came() -> None:
    rng = np.random.default_rng(3)
    docs = np.frombuffer(rng.bytes(16 * 500), dtype="V16")
    which = rng.integers(0, 500, 3000)
    weights = rng.random(3000)
    scores, ids = _summed(docs[which], weights)
    expected_ids = np.unique(docs[which])
    assert ids.tolist() == expected_ids.tolist()  # id order, each once
    for doc, score in zip(ids[:50], scores[:50], strict=True):
        total = 0.0
        for w in weights[docs[which] == doc]:  # left to right, as bincount and the SQL plan's sum add
            total += w
        assert score == total


def test_ids_sharing_their_first_eight_bytes_stay_apart() -> None:
    a, b = b"\x01" * 8 + b"\x02" * 8, b"\x01" * 8 + b"\x03" * 8
    scores, ids = _summed(_ids(a, b, a, b"\x00" * 16), np.array([1.0, 2.0, 3.0, 5.0]))
    assert ids.tolist() == [b"\x00" * 16, a, b]
    assert scores.tolist() == [5.0, 4.0, 2.0]


def test_nothing_scored_is_nothing() -> None:
    scores, ids = _summed(_ids(), np.array([]))
    assert len(scores) == 0 and len(ids) == 0


def test_the_best_go_by_score_then_id() -> None:
    scores = np.array([1.0, 3.0, 3.0, 2.0, 3.0])  # in id order
    assert _best(scores, 3).tolist() == [1, 2, 4]
    assert _best(scores, 10).tolist() == [1, 2, 4, 3, 0]
