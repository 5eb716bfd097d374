"""SwarmAI's session mix-rank and the merging of hit windows. Pure.

    score = w_density·density + w_recency·recency + w_richness·richness      (defaults 0.4, 0.35, 0.25)

- density ∈ [0, 1]: the hit's Okapi BM25 divided by the best BM25 among the candidates (the best is 1; a
  candidate set whose best is 0 scores 0).
- recency ∈ (0, 1]: 0.5 ** (age_days / half_life_days), age = the query's clock − the message's created_at
  (a message dated after the clock counts as age 0, recency 1).
- richness ∈ [0, 1]: min(1, distinct terms of the message / richness_terms): how much the message says (a bare
  "ok" is near 0, a paragraph 1).
Ties break by (session_id, seq), so an order is always the same for the same inputs.

A hit's window is the contiguous run of sent messages around it (up to `window` before and after); windows of
one session that overlap (one's first seq at or before the other's last) are merged into one result, scored by
its best hit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class MixWeights:
    density: float = 0.4
    recency: float = 0.35
    richness: float = 0.25


@dataclass(frozen=True)
class MixCandidate:
    session_id: str
    seq: int
    bm25: float
    created_at: datetime
    distinct_terms: int


@dataclass(frozen=True)
class MixRanked:
    candidate: MixCandidate
    score: float
    density: float
    recency: float
    richness: float


def mix_rank(candidates: Sequence[MixCandidate], now: datetime, weights: MixWeights, half_life_days: float,
             richness_terms: int) -> list[MixRanked]:
    """The candidates by mix-rank, best first (see the module's docstring)."""
    best = max((c.bm25 for c in candidates), default=0.0)
    out = []
    for c in candidates:
        density = c.bm25 / best if best > 0 else 0.0
        age_days = max(0.0, (now - c.created_at).total_seconds() / 86400)
        recency = 0.5 ** (age_days / half_life_days)
        richness = min(1.0, c.distinct_terms / richness_terms) if richness_terms > 0 else 0.0
        score = weights.density * density + weights.recency * recency + weights.richness * richness
        out.append(MixRanked(c, score, density, recency, richness))
    out.sort(key=lambda r: (-r.score, r.candidate.session_id, r.candidate.seq))
    return out


@dataclass
class Window:
    session_id: str
    first_seq: int
    last_seq: int
    score: float
    hits: list[MixRanked] = field(default_factory=list)


def merge_windows(windows: Sequence[Window]) -> list[Window]:
    """Overlapping windows of the same session merged (hits kept best first); best window first."""
    merged: list[Window] = []
    for w in sorted(windows, key=lambda w: (w.session_id, w.first_seq, w.last_seq)):
        last = merged[-1] if merged else None
        if last is not None and last.session_id == w.session_id and w.first_seq <= last.last_seq:
            last.last_seq = max(last.last_seq, w.last_seq)
            last.score = max(last.score, w.score)
            last.hits.extend(w.hits)
        else:
            merged.append(Window(w.session_id, w.first_seq, w.last_seq, w.score, list(w.hits)))
    for w in merged:
        w.hits.sort(key=lambda r: (-r.score, r.candidate.seq))
    merged.sort(key=lambda w: (-w.score, w.session_id, w.first_seq))
    return merged


__all__ = ["MixCandidate", "MixRanked", "MixWeights", "Window", "merge_windows", "mix_rank"]
