"""The one fusion function: SwarmAI's hybrid recipe, with the three conditions it is only valid with.

1. the keyword leg is real Okapi BM25 with IDF (computed by the keyword read model);
2. only the BM25 leg is min-max normalised over the candidates; the cosine stays absolute;
3. a candidate without a vector is scored on the BM25 leg renormalised to weight 1, never 0.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass


@dataclass(frozen=True)
class Candidate:
    memory_id: uuid.UUID
    bm25: float | None  # None: not matched by the keyword leg
    cosine: float | None  # None: the memory has no vector (yet)


@dataclass(frozen=True)
class Scored:
    memory_id: uuid.UUID
    score: float
    bm25: float | None
    bm25_normalised: float
    cosine: float | None
    weight_vector: float
    weight_keyword: float


def fuse(candidates: list[Candidate], weight_vector: float, weight_keyword: float,
         threshold: float) -> list[Scored]:
    """Score candidates, drop those under `threshold`, best first (ties broken by id for determinism)."""
    bm25_values = [c.bm25 for c in candidates if c.bm25 is not None]
    low, high = (min(bm25_values), max(bm25_values)) if bm25_values else (0.0, 0.0)
    low = min(low, 0.0)  # candidates absent from the keyword leg score 0, so 0 belongs to the range
    span = high - low
    scored = []
    for c in candidates:
        norm = ((c.bm25 or 0.0) - low) / span if span > 0 else (1.0 if c.bm25 else 0.0)
        if c.cosine is None:
            wv, wk = 0.0, 1.0
            score = norm
        else:
            wv, wk = weight_vector, weight_keyword
            score = wv * c.cosine + wk * norm
        if score >= threshold:
            scored.append(Scored(c.memory_id, score, c.bm25, norm, c.cosine, wv, wk))
    scored.sort(key=lambda s: (-s.score, str(s.memory_id)))
    return scored
