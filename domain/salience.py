"""The salience gate (AWM write path): how much a new observation is worth keeping. Pure functions.

    salience = 0.45·novelty + 0.15·surprise + 0.15·decision + 0.15·causal + 0.10·effort + type bonus
    disposition = active (salience ≥ 0.40) · staging (≥ 0.20) · discard (below)

Weights and thresholds are settings (ENGRAMLOG_SALIENCE_W_*, ENGRAMLOG_GATE_ACTIVE / _STAGING).

Novelty is information novelty (domain/novelty.py): how much of the observation its nearest memories in the
scope (active, staging or dormant) do not already hold, by key terms, content terms and a cosine calibrated to
the embedding model; filler is 0, an empty scope 1.0.

The other four signals are in [0, 1]. When the producer sends one (MemoryRecorded.signals) it is used as is
(source "producer"); otherwise it comes from these text heuristics (source "heuristic"), each of which also
answers the evidence it matched, recorded with the decision:

| signal   | heuristic                                                                                  |
| -------- | ------------------------------------------------------------------------------------------ |
| surprise | 0.35 · contrast word (but, however, although, though, yet, unexpected(ly), surprising(ly),   |
|          |   actually, instead, despite, whereas, turns out, in fact, contrary)                        |
|          | + 0.25 · negation or correction (not, n't, no, never, nothing, no longer, wrong, incorrect,  |
|          |   mistake(n))                                                                                |
|          | + 0.20 · a number                                                                            |
|          | + 0.20 · min(1, named entities / 2): capitalised words not opening a sentence (not "I")     |
| decision | 0.70 · a strong marker (decided, decide(s), decision, chose, chosen, choose, opted, settled |
|          |   on, agreed, going with, we will, we'll, selected, picked, resolved to, committed to)      |
|          | + 0.30 · a weak marker (will, 'll, plan(s/ned/ning) to, going to, intend(s) to, should)     |
| causal   | 0.60 for the first distinct marker + 0.40 for a second (because, so that, caused, causes,   |
|          |   causing, due to, therefore, as a result, leads to, led to, resulted in, results in,        |
|          |   hence, thus, in order to, which means, that's why, consequently, since)                   |
| effort   | 0.80 · min(1, words / 40) + 0.20 · structure (two or more sentences, a list, a code span,   |
|          |   a path or a URL)                                                                          |

A correction signal (used by the supersede path, not by the score) is the producer's signals.correction when
given, else a correction phrase in the text: actually, correction, was/were/is wrong, wrong about,
incorrect, mistaken, turns/turned out, no longer, not anymore, anymore, instead of, rather than,
changed to, has/have changed, is/are now, update:, should have been.

Type bonus per memory type (corrections and lessons learned are load-bearing, plain models are not):

| type       | bonus |
| ---------- | ----- |
| correction | 0.15  |
| pitfall    | 0.10  |
| decision   | 0.10  |
| principle  | 0.10  |
| guideline  | 0.05  |
| process    | 0.05  |
| model      | 0.00  |
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from domain.text import word_pattern

SIGNALS = ("surprise", "decision", "causal", "effort")
Source = Literal["producer", "heuristic"]
Disposition = Literal["active", "staging", "discard"]

TYPE_BONUS: dict[str, float] = {
    "correction": 0.15, "pitfall": 0.10, "decision": 0.10, "principle": 0.10,
    "guideline": 0.05, "process": 0.05, "model": 0.0,
}


@dataclass(frozen=True)
class Weights:
    novelty: float = 0.45
    surprise: float = 0.15
    decision: float = 0.15
    causal: float = 0.15
    effort: float = 0.10

    def as_dict(self) -> dict[str, float]:
        return {"novelty": self.novelty, "surprise": self.surprise, "decision": self.decision,
                "causal": self.causal, "effort": self.effort}


@dataclass(frozen=True)
class Thresholds:
    active: float = 0.40
    staging: float = 0.20

    def __post_init__(self) -> None:
        if self.staging > self.active:
            raise ValueError(f"staging threshold {self.staging} is above the active threshold {self.active}")


@dataclass(frozen=True)
class Signal:
    value: float
    source: Source
    evidence: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"value": round(self.value, 6), "source": self.source, "evidence": list(self.evidence)}


@dataclass(frozen=True)
class Correction:
    value: bool
    source: Source
    evidence: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "source": self.source, "evidence": list(self.evidence)}


@dataclass(frozen=True)
class Salience:
    score: float
    disposition: Disposition
    novelty: float
    signals: dict[str, Signal] = field(default_factory=dict)
    type_bonus: float = 0.0

    def inputs(self) -> dict[str, Any]:
        return {"salience": round(self.score, 6), "novelty": round(self.novelty, 6),
                "signals": {k: s.as_dict() for k, s in self.signals.items()}, "type_bonus": self.type_bonus}


# --------------------------------------------------------------------------------------------- heuristics


_CONTRAST = word_pattern("but", "however", "although", "though", "yet", "unexpected(?:ly)?", "surprising(?:ly)?",
                   "actually", "instead", "despite", "whereas", "turns out", "in fact", "contrary")
_NEGATION = re.compile(r"(?<![\w'])(not|no|never|nothing|no longer|wrong|incorrect|mistaken?)(?![\w'])|n't\b",
                       re.IGNORECASE)
_NUMBER = re.compile(r"\d")
_CAPITALISED = re.compile(r"\b[A-Z][\w'-]*")
_SENTENCE_START = re.compile(r"(^|[.!?:;]\s+|\n\s*|[\"'(\[]\s*)$")
_DECISION_STRONG = word_pattern("decided", "decides?", "decision", "chose", "chosen", "choose", "opted",
                          "settled on", "agreed", "going with", "we will", "we'll", "selected", "picked",
                          "resolved to", "committed to")
_DECISION_WEAK = re.compile(r"(?<![\w'])(will|plan(?:s|ned|ning)? to|going to|intends? to|should)(?![\w'])|'ll\b",
                            re.IGNORECASE)
_CAUSAL = word_pattern("because", "so that", "caused", "causes", "causing", "due to", "therefore", "as a result",
                 "leads to", "led to", "resulted in", "results in", "hence", "thus", "in order to",
                 "which means", "that's why", "consequently", "since")
_CORRECTION = word_pattern("actually", "correction", "(?:was|were|is|are) wrong", "wrong about", "incorrect",
                     "mistaken", "turn(?:s|ed) out", "no longer", "not anymore", "anymore", "instead of",
                     "rather than", "changed to", "(?:has|have) changed", "(?:is|are) now", "should have been")
_UPDATE_PREFIX = re.compile(r"^\s*(update|correction)\s*:", re.IGNORECASE)
_NOW = re.compile(r"(?:is|are)\s+now", re.IGNORECASE)  # the one correction phrase an addition says too
_ADDS = word_pattern("also", "too", "as well", "additionally")
_STRUCTURE = re.compile(r"`|https?://|(^|\s)[\w.-]*/[\w./-]+|(^|\n)\s*([-*•]|\d+[.)])\s", re.MULTILINE)
_SENTENCE_END = re.compile(r"[.!?](\s|$)")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)


def _distinct(matches: list[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for m in matches:
        seen.setdefault(m.lower(), None)
    return tuple(seen)


def named_entities(text: str) -> tuple[str, ...]:
    """Capitalised words that do not open a sentence (a cheap proper-noun detector), "I" excluded."""
    found = []
    for m in _CAPITALISED.finditer(text):
        word = m.group()
        if word in ("I", "I'm", "I've", "I'll", "I'd"):
            continue
        if _SENTENCE_START.search(text[: m.start()]):
            continue
        found.append(word)
    return tuple(dict.fromkeys(found))


def surprise_heuristic(text: str) -> Signal:
    contrast = _distinct([m.group(1) for m in _CONTRAST.finditer(text)])
    negation = _distinct([m.group(0).strip() for m in _NEGATION.finditer(text)])
    number = bool(_NUMBER.search(text))
    entities = named_entities(text)
    value = 0.35 * bool(contrast) + 0.25 * bool(negation) + 0.20 * number + 0.20 * min(1.0, len(entities) / 2)
    evidence = ([f"contrast:{w}" for w in contrast] + [f"negation:{w}" for w in negation]
                + (["number"] if number else []) + [f"entity:{e}" for e in entities])
    return Signal(min(1.0, value), "heuristic", tuple(evidence))


def decision_heuristic(text: str) -> Signal:
    strong = _distinct([m.group(1) for m in _DECISION_STRONG.finditer(text)])
    weak = _distinct([m.group(0).strip() for m in _DECISION_WEAK.finditer(text)])
    value = 0.7 * bool(strong) + 0.3 * bool(weak)
    return Signal(min(1.0, value), "heuristic", tuple([f"strong:{w}" for w in strong] + [f"weak:{w}" for w in weak]))


def causal_heuristic(text: str) -> Signal:
    markers = _distinct([m.group(1) for m in _CAUSAL.finditer(text)])
    value = (0.6 if markers else 0.0) + (0.4 if len(markers) > 1 else 0.0)
    return Signal(min(1.0, value), "heuristic", markers)


def effort_heuristic(text: str) -> Signal:
    words = len(_WORD.findall(text))
    sentences = len(_SENTENCE_END.findall(text.strip()))
    structure = sentences >= 2 or bool(_STRUCTURE.search(text))
    value = 0.8 * min(1.0, words / 40) + 0.2 * structure
    evidence = [f"words:{words}"] + (["structure"] if structure else [])
    return Signal(min(1.0, value), "heuristic", tuple(evidence))


HEURISTICS = {"surprise": surprise_heuristic, "decision": decision_heuristic, "causal": causal_heuristic,
              "effort": effort_heuristic}


def resolve_signals(text: str, producer: dict[str, Any] | None) -> dict[str, Signal]:
    """Each of the four signals: the producer's value when it sent one, else the text heuristic."""
    producer = producer or {}
    out: dict[str, Signal] = {}
    for name in SIGNALS:
        given = producer.get(name)
        out[name] = Signal(float(given), "producer") if given is not None else HEURISTICS[name](text)
    return out


def correction_signal(text: str, producer: dict[str, Any] | None) -> Correction:
    """Does this write correct something? The producer's signals.correction when given, else a phrase."""
    given = (producer or {}).get("correction")
    if given is not None:
        return Correction(bool(given), "producer")
    found = [m.group(1) for m in _CORRECTION.finditer(text)]
    if _ADDS.search(text):  # "Lucy is now also allergic to shellfish": what is now true besides, not instead
        found = [f for f in found if not _NOW.fullmatch(f)]
    if update := _UPDATE_PREFIX.search(text):
        found.insert(0, update.group(1))
    evidence = _distinct(found)
    return Correction(bool(evidence), "heuristic", evidence)


# ---------------------------------------------------------------------------------------------- the gate


def type_bonus(memory_type: str) -> float:
    return TYPE_BONUS.get(memory_type, 0.0)


def disposition(score: float, thresholds: Thresholds) -> Disposition:
    if score >= thresholds.active:
        return "active"
    if score >= thresholds.staging:
        return "staging"
    return "discard"


def salience(novelty: float, signals: dict[str, Signal], memory_type: str,
             weights: Weights = Weights(), thresholds: Thresholds = Thresholds()) -> Salience:
    """The gate's score for an observation of information novelty `novelty` (domain/novelty.py)."""
    nov = min(1.0, max(0.0, novelty))
    bonus = type_bonus(memory_type)
    score = (weights.novelty * nov + weights.surprise * signals["surprise"].value
             + weights.decision * signals["decision"].value + weights.causal * signals["causal"].value
             + weights.effort * signals["effort"].value + bonus)
    return Salience(score, disposition(score, thresholds), nov, signals, bonus)
