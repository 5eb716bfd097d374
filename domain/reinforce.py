"""Reinforcement and confidence: what a repeated observation does to the memory it repeats. Pure.

Merge policy (MemoryReinforced.merged_content), the first that applies:
1. the observation says nothing the memory does not (its normalised text is inside the memory's, or every
   one of its terms already appears there) → the memory's content, unchanged;
2. the memory's normalised text is inside the observation's (the observation is the same and more) → the
   observation's content, when it fits the content limit;
3. otherwise → the memory's content followed by each sentence of the observation that brings a term the
   memory lacks, in order, while the result fits the content limit. Nothing is lost either way: the
   observation itself stays in the log (discarded, pointing at the memory it reinforced).

Confidence, always in [0, 1]: a memory starts at 0.5; a reinforcement moves it a share `gain` of the way to 1
(c + gain·(1 − c), gain = ENGRAMLOG_REINFORCE_CONFIDENCE_GAIN, recorded in the event); recall feedback moves
it FEEDBACK_STEP of the way to 1 when the memory was used (c + 0.1·(1 − c)) and to 0 when it was not
useful (c − 0.1·c). The feedback rule is a constant, not a setting, because the memories projector applies
it and a replay must reproduce it whatever the settings are then.

Reinforcement and consolidation's merge (domain/consolidation.py) are two different operations, on purpose:

| | reinforcement (write path) | consolidation merge (MemoriesMerged) |
| --- | --- | --- |
| what | a new observation (cosine ≥ 0.92) repeats a memory | stored memories (cosine > 0.85, same kind) |
| content | `merge_content`: the observation's new terms appended | the kept memory's wording, unchanged |
| confidence | `reinforced_confidence`: + gain (recorded in the event) | `merged_confidence`: evidence pooled |
| access stats | + 1 access of the target (projections/activity.py) | the merged ones' folded into the kept |

Why the content differs: a reinforced observation is discarded from recall, so what it adds must go into the
memory or recall loses it; and the change is paid once, on a write (the memory is re-embedded and re-indexed).
A merged memory stays whole in `memories` (status 'merged', merged_into the kept one), and consolidation must
be idempotent: rewriting the kept memory would re-embed it, move its cosines, and make the next cycle cluster,
link and maybe merge differently — so the kept wording is not touched. Why confidence differs: an observation
carries no confidence of its own (the gain is the evidence of one repeat), while each merged memory has its own,
earned from its reinforcements and feedback; pooling keeps all of it, and is a constant rule because the
memories projector applies it on replay (MemoriesMerged carries no confidence).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence

from domain.text import tokenize

INITIAL_CONFIDENCE = 0.5
FEEDBACK_STEP = 0.1
_CONFIDENCE_EPS = 1e-6  # keeps a confidence of exactly 0 or 1 finite in log-odds

_SENTENCES = re.compile(r"[^.!?\n]+(?:[.!?]+|$)")
_SPACE = re.compile(r"\s+")


def _normalise(text: str) -> str:
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).lower()).strip().rstrip(".!?")


def merge_content(memory: str, observation: str, max_chars: int) -> str:
    memory_norm, observation_norm = _normalise(memory), _normalise(observation)
    known = set(tokenize(memory))
    if observation_norm in memory_norm or set(tokenize(observation)) <= known:
        return memory
    if memory_norm in observation_norm:
        return observation if len(observation) <= max_chars else memory
    merged = memory.rstrip()
    for sentence in (s.strip() for s in _SENTENCES.findall(observation)):
        terms = set(tokenize(sentence))
        if not sentence or terms <= known:
            continue
        candidate = f"{merged} {sentence}" if merged[-1:] in ".!?" else f"{merged}. {sentence}"
        if len(candidate) > max_chars:
            break
        merged, known = candidate, known | terms
    return merged


def clamp(value: float) -> float:
    return min(1.0, max(0.0, value))


def reinforced_confidence(confidence: float, gain: float) -> float:
    return clamp(confidence + gain * (1.0 - confidence))


def feedback_confidence(confidence: float, verdict: str) -> float:
    if verdict == "used":
        return clamp(confidence + FEEDBACK_STEP * (1.0 - confidence))
    if verdict == "not_useful":
        return clamp(confidence - FEEDBACK_STEP * confidence)
    raise ValueError(f"unknown feedback verdict {verdict!r}")


def merged_confidence(confidences: Sequence[float]) -> float:
    """The confidence of the memory a consolidation merge keeps, from the group's (kept and merged ones).

    Each memory's confidence is evidence about the same concept, relative to the 0.5 every memory starts at;
    independent evidence adds in log-odds: logit(c) = Σ logit(c_i). A fresh copy (0.5) adds nothing, two
    memories at 0.55 give 0.599, one at 0.45 and one at 0.6 give 0.551. The sum is commutative, so the order of
    `merged_ids` does not matter beyond float rounding (the projector sums in the event's order).
    """
    if not confidences:
        raise ValueError("a merge needs at least one confidence")
    total = 0.0
    for c in confidences:
        c = min(1.0 - _CONFIDENCE_EPS, max(_CONFIDENCE_EPS, c))
        total += math.log(c / (1.0 - c))
    return round(clamp(1.0 / (1.0 + math.exp(-total))), 6)
