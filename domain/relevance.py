"""One relevance scale across the recall domains: the calibrated chance that a result answers its query.

Each domain's own score is comparable within its bucket only (min-max BM25, mix-rank, the memories' composite).
Relevance is a logistic model over a few absolute features every domain can say of a result:

    cosine      the query-item cosine in the configured model (0 when the item has no vector yet)
    has_vector  1 when it has one
    bm25        its Okapi BM25, saturated: bm25 / (bm25 + BM25_HALF) (0 when the keyword leg did not match it)
    coverage    the share of the query's distinct terms the item holds (the domain's tokenizer)
    title_only  1 for a knowledge section with no text beyond its headings (it names a topic, answers nothing)

    relevance = 1 / (1 + exp(-(bias + Σ wᵢ·featureᵢ)))

with one coefficient vector per (embedding model, domain), fitted on labelled (query, item, answers?) pairs by
bench/relevance_calibration.py and kept in recall/relevance_table.py. Pure: no IO.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

BM25_HALF = 5.0  # the BM25 at which the saturated feature is 0.5
FEATURES = ("bias", "cosine", "has_vector", "bm25", "coverage", "title_only")


@dataclass(frozen=True)
class Features:
    cosine: float | None
    bm25: float | None
    coverage: float
    title_only: bool = False

    def vector(self) -> list[float]:
        bm25 = max(0.0, self.bm25 or 0.0)
        return [1.0, self.cosine or 0.0, 0.0 if self.cosine is None else 1.0, bm25 / (bm25 + BM25_HALF),
                self.coverage, 1.0 if self.title_only else 0.0]

    def as_dict(self) -> dict[str, float]:
        return dict(zip(FEATURES[1:], (round(v, 6) for v in self.vector()[1:]), strict=True))


def coverage(query_terms: Iterable[str], item_terms: Iterable[str]) -> float:
    """The share of the query's distinct terms the item holds (0 for a query without terms)."""
    wanted = set(query_terms)
    return len(wanted & set(item_terms)) / len(wanted) if wanted else 0.0


def relevance(coefficients: Sequence[float], features: Features) -> float:
    """The calibrated chance, in [0, 1], rounded to 6 places so that the same inputs always give the same value."""
    z = sum(w * x for w, x in zip(coefficients, features.vector(), strict=True))
    z = max(-60.0, min(60.0, z))
    return round(1.0 / (1.0 + math.exp(-z)), 6)


__all__ = ["BM25_HALF", "FEATURES", "Features", "coverage", "relevance"]
