"""The governor's decision, pure: what each recorded memory of a batch becomes (services/governance.py runs it
inside the write's transaction, with the neighbours services/neighbours.py found).

For every MemoryRecorded of a batch, in batch order, the first rule that applies decides:

1. must-keep → MemoryAdmitted(active, reason "must_keep"): the gate is bypassed and nothing is embedded here
   (the vectors projector embeds it as usual). A `supersedes` on it is still honoured (rule 2's event).
2. explicit `supersedes` → admitted active, and MemorySuperseded(old, new, the write's reason, "explicit"),
   appended with the writer's own metadata: the writer decided it.
3. a correction signal (the producer's signals.correction, else a correction phrase) and a nearest memory at
   cosine ≥ the supersede threshold of whose content terms the write leaves at most CORRECTION_MAX_UNSAID unsaid
   (and, for a phrase, at most half: `restates`) → admitted active, and MemorySuperseded(nearest, new,
   "correction_signal"). A correction restates what it
   corrects with a value or two changed; a nearest memory saying more that the write does not repeat (another
   service's error code, function and table in a long technical message that says "instead of") still holds,
   and stays.
3b. a near memory (of the NEAREST_PER_QUERY) for which the write states a new value (domain/update.py: same words
   but one place of values, a different number, date, name or identifier) → admitted active, and
   MemorySuperseded(that memory, new, "value_update"); the evidence (shared subject/attribute terms, old and new
   values, the cosine) is in the decision's inputs (`update`).
4. a near memory that already holds the observation (domain/novelty.is_repeat: every content term in it, or
   cosine ≥ the reinforce threshold, and no key term it lacks: a new number is never merged away; filler
   reinforces nothing) → MemoryReinforced(that memory, merged content per domain/reinforce.py, new
   confidence); the observation is admitted as `discard` (reason "reinforced <id>"), so it stays in the log but
   not in recall; a staging or dormant memory reinforced is made active again (MemoryStatusChanged, reason
   "reinforced", with the governor's clock).
5. otherwise → MemoryAdmitted with the salience gate's disposition (domain/salience.py), its novelty the
   information novelty of domain/novelty.py against the NEAREST_PER_QUERY nearest memories, calibrated to the
   embedding model; the evidence (terms, key terms, per neighbour what is new, the calibration) is recorded in
   the decision's inputs (`novelty_evidence`).

Every MemoryAdmitted carries all the inputs used, and every decision is appended by the system actor (except
rule 2's) with causation_id = the MemoryRecorded's event id, so the projectors only apply decisions and a
replay reproduces them. A neighbour the log already shows superseded is skipped, whatever the read model says.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from domain.batch_vectors import BatchVectors
from domain.classify import classify, route
from domain.errors import AlreadySuperseded
from domain.events import SYSTEM_ACTOR, MemoryRecorded, NewEvent, memory_stream, validate_payload
from domain.memory_status import DISPOSITION_STATUS, NEIGHBOUR_STATUSES
from domain.novelty import Calibration, Neighbour, content_terms, is_repeat, novelty, unsaid_terms
from domain.reinforce import INITIAL_CONFIDENCE, merge_content, reinforced_confidence
from domain.salience import Correction, Thresholds, Weights, correction_signal, resolve_signals, salience
from domain.update import update_of

NEAREST_PER_QUERY = 3
CORRECTION_MAX_UNSAID = 3  # content terms of the nearest memory a correction may leave unsaid (rule 3)


def restates(correction: Correction, unsaid: list[str], nearest: str) -> bool:
    """Whether a correction restates what it would supersede: a phrase found in the text ("is now") must leave at
    most half of the nearest memory's content terms unsaid, or a short memory is "corrected" by any write near it
    ("Mom is now a volunteer at the library" after "Mom is a retired teacher": two of three unsaid). A producer's
    own signal is taken at its word."""
    return correction.source == "producer" or 2 * len(unsaid) <= len(content_terms(nearest))

ScopeKey = tuple[str | None, str | None]  # (agent_id, project) within the tenant


@dataclass(frozen=True)
class Knobs:
    """The governor's settings (ENGRAMLOG_SALIENCE_W_*, _GATE_*, _REINFORCE_THRESHOLD, ...)."""

    weights: Weights
    thresholds: Thresholds
    reinforce_threshold: float
    supersede_threshold: float
    max_content_chars: int
    confidence_gain: float
    embedding_model: str


@dataclass(frozen=True)
class Decision:
    """What the governor made of one recorded memory (the write's answer), and the events that say so."""

    memory_id: uuid.UUID
    disposition: str
    salience: float
    memory_type: str
    route: str
    reason: str
    reinforced: uuid.UUID | None = None
    supersedes: uuid.UUID | None = None
    events: tuple[NewEvent, ...] = ()

    @classmethod
    def from_admitted(cls, data: dict[str, Any]) -> Decision:
        """The decision as the log holds it (for a retried write: the same answer as the first time)."""
        inputs = data.get("inputs") or {}
        as_id = (lambda v: uuid.UUID(v) if v else None)  # noqa: E731
        return cls(uuid.UUID(data["memory_id"]), data["disposition"], data["salience"], data["kind"], data["route"],
                   data["reason"], as_id(inputs.get("reinforced")), as_id(inputs.get("supersedes")))


@dataclass
class NearMemory:
    memory_id: uuid.UUID
    cosine: float
    status: str
    content: str
    confidence: float
    reinforced_count: int
    source: str  # read_model | unprojected | batch


@dataclass
class Known:
    """A memory this batch admitted or changed: its latest state, for the decisions after it in the batch."""

    memory_id: uuid.UUID
    scope: ScopeKey
    vector: np.ndarray | None
    status: str
    content: str
    confidence: float
    reinforced_count: int = 0
    touched_stream: bool = False  # an event of this batch is on its stream: no expected_version on it


@dataclass
class Write:
    event: NewEvent
    memory: MemoryRecorded
    vector: np.ndarray | None = None
    literal: str | None = None  # the vector as a pgvector literal
    neighbours: list[NearMemory] = field(default_factory=list)
    old_cosine: float | None = None  # explicit supersede: cosine to the memory it supersedes, when projected


@dataclass
class StreamState:
    """What the log says of one memory now (authoritative, whatever the projections' lag)."""

    recorded: dict[str, Any] | None = None
    superseded: bool = False
    version: int = 0
    reinforcements: int = 0
    last_reinforced: dict[str, Any] | None = None


class Governor:
    """Decides a batch's recorded memories in batch order, each seeing the decisions before it (`known`).

    Pure: what it needs from the database (neighbours, stream states, the calibration) is handed in, and
    `embed` embeds reinforced content (the service gives it the write's transaction)."""

    def __init__(self, tenant: str, metadata: dict[str, Any], knobs: Knobs, clock: datetime,
                 embed: Callable[[list[str]], list[np.ndarray]] | None = None) -> None:
        self.tenant, self.metadata, self.knobs, self.clock = tenant, metadata, knobs, clock
        self.embed_texts = embed
        self.known: dict[uuid.UUID, Known] = {}  # admitted or changed in this batch, in batch order
        self.superseded: set[uuid.UUID] = set()
        self.states: dict[uuid.UUID, StreamState] = {}
        self.calibration: Calibration | None = None  # the model's novelty calibration, set before deciding
        self.batch_vectors: dict[ScopeKey, BatchVectors] = {}

    # ------------------------------------------------------------------------------------------- metadata

    def system_metadata(self, cause: NewEvent) -> dict[str, Any]:
        return {"actor": SYSTEM_ACTOR, "correlation_id": self.metadata.get("correlation_id"),
                "causation_id": str(cause.event_id), "source": self.metadata.get("source"),
                "requested_by": self.metadata.get("actor")}

    def event(self, type_: str, memory_id: uuid.UUID, data: dict[str, Any], metadata: dict[str, Any],
              expected_version: int | None = None) -> NewEvent:
        return NewEvent(type_, memory_stream(memory_id), validate_payload(type_, data),
                        expected_version=expected_version, metadata=metadata)

    def expected_version(self, memory_id: uuid.UUID) -> int | None:
        """Optimistic concurrency on the superseded memory's stream, unless this batch already wrote to it."""
        known = self.known.get(memory_id)
        state = self.states.get(memory_id)
        if (known and known.touched_stream) or state is None or state.recorded is None:
            return None
        return state.version

    # ------------------------------------------------------------------------------------------- decisions

    def decide(self, w: Write) -> Decision:
        m = w.memory
        typed = classify(m.content, m.kind)
        routed = route(m.content, typed.memory_type, m.kind, m.project)
        base = {"kind": m.kind, "memory_type": typed.memory_type, "type_source": typed.source,
                "type_rule": typed.rule, "route": routed.route, "route_rule": routed.rule,
                "must_keep": m.must_keep}
        if m.must_keep:
            return self.admit(w, "active", 1.0, typed.memory_type, routed.route, "must_keep",
                              {**base, "gate": "bypassed (must_keep): salience 1.0 by convention"},
                              supersede=(m.supersedes, "explicit", None) if m.supersedes else None)

        nearest = self.nearest(w)
        signals = m.signals.model_dump() if m.signals else None
        compared = w.neighbours[:NEAREST_PER_QUERY]
        assert self.calibration is not None, "prepare() calibrates before any governed decision"
        informed = novelty(m.content, [Neighbour(str(n.memory_id), n.cosine, n.content) for n in compared],
                           self.calibration)
        scored = salience(informed.value, resolve_signals(m.content, signals), typed.memory_type, self.knobs.weights,
                          self.knobs.thresholds)
        correction = correction_signal(m.content, signals)
        # What the nearest memory says that this correction does not (rule 3 reads it; recorded with the decision).
        unsaid = unsaid_terms(nearest.content, m.content) if correction.value and nearest else []
        # The neighbour that already holds the observation (a repeat or a paraphrase, no new key term), if any.
        repeat = None if informed.filler else next(
            (n for n, c in zip(compared, informed.comparisons, strict=True)
             if is_repeat(c, self.knobs.reinforce_threshold)), None)
        inputs = {**base, **scored.inputs(), "novelty_evidence": informed.as_dict(),
                  "correction": {**correction.as_dict(), **({"nearest_unsaid_terms": unsaid} if unsaid else {})},
                  "nearest_id": str(nearest.memory_id) if nearest else None,
                  "nearest_cosine": round(nearest.cosine, 6) if nearest else None,
                  "nearest_source": nearest.source if nearest else None,
                  "neighbours": [{"memory_id": str(n.memory_id), "cosine": round(n.cosine, 6), "source": n.source}
                                 for n in compared],
                  "weights": self.knobs.weights.as_dict(),
                  "thresholds": {"active": self.knobs.thresholds.active, "staging": self.knobs.thresholds.staging,
                                 "reinforce": self.knobs.reinforce_threshold,
                                 "supersede": self.knobs.supersede_threshold},
                  "embedding_model": self.knobs.embedding_model}

        if m.supersedes:
            similarity = self.similarity_to(w, m.supersedes)
            return self.admit(w, "active", scored.score, typed.memory_type, routed.route, f"supersedes {m.supersedes}",
                              inputs, supersede=(m.supersedes, "explicit", similarity))
        if (correction.value and nearest and nearest.cosine >= self.knobs.supersede_threshold
                and len(unsaid) <= CORRECTION_MAX_UNSAID and restates(correction, unsaid, nearest.content)):
            return self.admit(w, "active", scored.score, typed.memory_type, routed.route,
                              f"supersedes {nearest.memory_id} (correction signal)", inputs,
                              supersede=(nearest.memory_id, "correction_signal", nearest.cosine))
        # A new value for what a near memory says (domain/update.py): the newer wins, the older is superseded.
        update = None if informed.filler else next(
            ((n, u) for n in compared if (u := update_of(m.content, n.content)) is not None), None)
        if update is not None:
            target, evidence = update
            inputs = {**inputs, "update": {"memory_id": str(target.memory_id), "cosine": round(target.cosine, 6),
                                           **evidence.as_dict()}}
            return self.admit(w, "active", scored.score, typed.memory_type, routed.route,
                              f"supersedes {target.memory_id} (new value: {', '.join(evidence.old_values)} → "
                              f"{', '.join(evidence.new_values)})", inputs,
                              supersede=(target.memory_id, "value_update", target.cosine))
        if repeat is not None:
            return self.reinforce(w, repeat, scored.score, typed.memory_type, routed.route, inputs)
        return self.admit(w, scored.disposition, scored.score, typed.memory_type, routed.route,
                          f"salience {scored.score:.3f} → {scored.disposition}", inputs)

    def admit(self, w: Write, disposition: str, score: float, memory_type: str, route_: str, reason: str,
              inputs: dict[str, Any], supersede: tuple[uuid.UUID, str, float | None] | None = None) -> Decision:
        m = w.memory
        old = supersede[0] if supersede else None
        inputs = {**inputs, "supersedes": str(old) if old else None, "reinforced": None}
        admitted = self.event("MemoryAdmitted", m.memory_id, {
            "memory_id": str(m.memory_id), "disposition": disposition, "salience": round(score, 6),
            "kind": memory_type, "route": route_, "reason": reason, "inputs": inputs}, self.system_metadata(w.event))
        events = [admitted]
        if supersede:
            old, trigger, similarity = supersede
            if old in self.superseded:
                raise AlreadySuperseded(f"memory {old} is superseded twice in one batch")
            if trigger == "explicit":
                why = m.reason or "superseded by the producer"
                meta = {**self.metadata, "causation_id": str(w.event.event_id)}
            elif trigger == "value_update":
                why = m.reason or f"a new value for what it says ({reason})"
                meta = self.system_metadata(w.event)
            else:
                why = m.reason or f"correction signal on a matched concept (cosine {similarity:.3f})"
                meta = self.system_metadata(w.event)
            events.append(self.event("MemorySuperseded", old, {
                "memory_id": str(old), "superseded_by": str(m.memory_id), "reason": why, "trigger": trigger,
                "similarity": None if similarity is None else round(similarity, 6)}, meta,
                expected_version=self.expected_version(old)))
            self.superseded.add(old)
            self.forget(old)
        if DISPOSITION_STATUS[disposition] in NEIGHBOUR_STATUSES:  # a later write of the batch compares with it
            self.keep(Known(m.memory_id, (m.agent_id, m.project), w.vector,
                                             DISPOSITION_STATUS[disposition], m.content, INITIAL_CONFIDENCE,
                                             touched_stream=True))
        return Decision(m.memory_id, disposition, round(score, 6), memory_type, route_, reason,
                        supersedes=old, events=tuple(events))

    def reinforce(self, w: Write, nearest: NearMemory, score: float, memory_type: str, route_: str,
                  inputs: dict[str, Any]) -> Decision:
        m, target = w.memory, nearest.memory_id
        known = self.known.get(target)
        if known is not None:
            content, confidence, status = known.content, known.confidence, known.status
        else:
            content, confidence, status = nearest.content, nearest.confidence, nearest.status
            state = self.states.get(target)
            if state and state.reinforcements > nearest.reinforced_count and state.last_reinforced:
                # The log holds reinforcements the read model has not applied yet: start from the latest.
                content = state.last_reinforced["merged_content"]
                confidence = state.last_reinforced["confidence"]
        merged = merge_content(content, m.content, self.knobs.max_content_chars)
        new_confidence = round(reinforced_confidence(confidence, self.knobs.confidence_gain), 6)
        reason = f"reinforced {target}"
        inputs = {**inputs, "reinforced": str(target), "supersedes": None,
                  "target_status": status, "target_confidence": confidence,
                  "merge": "unchanged" if merged == content else "merged",
                  "confidence_gain": self.knobs.confidence_gain}
        meta = self.system_metadata(w.event)
        events = [
            self.event("MemoryAdmitted", m.memory_id, {
                "memory_id": str(m.memory_id), "disposition": "discard", "salience": round(score, 6),
                "kind": memory_type, "route": route_, "reason": reason, "inputs": inputs}, meta),
            self.event("MemoryReinforced", target, {
                "memory_id": str(target), "observation_id": str(m.memory_id), "similarity": round(nearest.cosine, 6),
                "merged_content": merged, "confidence": new_confidence}, meta),
        ]
        if status != "active":  # staging or dormant: a repeat makes it active again
            events.append(self.event("MemoryStatusChanged", target, {
                "memory_id": str(target), "from_status": status, "to_status": "active", "reason": "reinforced",
                "clock": self.clock.isoformat(),
                "inputs": {"observation_id": str(m.memory_id), "similarity": round(nearest.cosine, 6)}}, meta))
        vector = known.vector if known is not None else None
        if merged != content:
            vector = self.embed([merged])[0]
        self.keep(Known(target, (m.agent_id, m.project), vector, "active", merged, new_confidence,
                                    (known.reinforced_count if known else nearest.reinforced_count) + 1,
                                    touched_stream=True))
        return Decision(m.memory_id, "discard", round(score, 6), memory_type, route_, reason, reinforced=target,
                        events=tuple(events))

    # ------------------------------------------------------------------------------------------- neighbours

    def keep(self, known: Known) -> None:
        """Record a memory this batch admitted or changed (and its vector, for the writes after it)."""
        self.known[known.memory_id] = known
        self.batch_vectors.setdefault(known.scope, BatchVectors()).put(known.memory_id, known.vector)

    def forget(self, memory_id: uuid.UUID) -> None:
        known = self.known.pop(memory_id, None)
        if known is not None:
            self.batch_vectors[known.scope].put(memory_id, None)

    def embed(self, texts: list[str]) -> list[np.ndarray]:
        if self.embed_texts is None:
            raise RuntimeError("the governor embeds reinforced content only while deciding")
        return self.embed_texts(texts)

    def nearest(self, w: Write) -> NearMemory | None:
        """The most similar recallable memory of the write's scope, this batch's changes applied."""
        scope = (w.memory.agent_id, w.memory.project)
        best: dict[uuid.UUID, NearMemory] = {}
        for n in w.neighbours:
            if n.memory_id in self.superseded or n.memory_id == w.memory.memory_id:
                continue
            state = self.states.get(n.memory_id)
            if state is not None and state.superseded:  # the log is ahead of the read model
                continue
            known = self.known.get(n.memory_id)
            if known is None:
                best.setdefault(n.memory_id, n)
            elif known.vector is None:  # changed in this batch but not its content: its state, the same cosine
                best.setdefault(n.memory_id, NearMemory(n.memory_id, n.cosine, known.status, known.content,
                                                        known.confidence, known.reinforced_count, n.source))
        batch = self.batch_vectors.get(scope)
        if batch is not None and w.vector is not None:
            for memory_id, cosine in batch.nearest(w.vector, NEAREST_PER_QUERY + 1):
                k = self.known[memory_id]
                if memory_id != w.memory.memory_id:
                    best[memory_id] = NearMemory(memory_id, cosine, k.status, k.content, k.confidence,
                                                 k.reinforced_count, "batch")
        ranked = sorted(best.values(), key=lambda n: (-n.cosine, str(n.memory_id)))
        w.neighbours = ranked
        return ranked[0] if ranked else None

    def similarity_to(self, w: Write, memory_id: uuid.UUID) -> float | None:
        for n in w.neighbours:
            if n.memory_id == memory_id:
                return n.cosine
        known = self.known.get(memory_id)
        if known is not None and known.vector is not None and w.vector is not None:
            return float(np.dot(w.vector, known.vector))
        return w.old_cosine


__all__ = ["NEAREST_PER_QUERY", "Decision", "Governor", "Knobs", "Known", "NearMemory", "ScopeKey",
           "StreamState", "Write"]
