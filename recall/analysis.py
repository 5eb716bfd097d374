"""Analyst queries over the hit-log: SwarmAI's open question 1 (is a semantic leg worth building everywhere?),
answered from our own recalls.

Per domain, over the recalls whose results recorded their legs ({"keyword": .., "vector": ..}; a leg that did not
find the result is null):
- a result is *vector-only* when its keyword leg is null and its vector leg is not: the keyword leg missed it;
- a result is *used* when the client said so (RecallFeedbackGiven "used", memories) or drilled into it
  (ResultDrilled naming the recall, any domain); *not useful* when feedback said "not_useful" (the first verdict
  per memory and recall counts, as the projectors count it). Only memories have a not-useful signal today.
- keyword false negatives: the share of recalls where a vector-only result was used;
- hybrid false positives: the share of vector-only results marked not useful.
SwarmAI's gate (build semantic everywhere only if >= 20% keyword false negatives with < 10% hybrid false
positives) is reported as its thresholds next to the figures; no decision is taken here.

Reads the log only (the recall streams, in stream order, one stream at a time: constant memory).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from domain.events import MEMORIES, RecallFeedbackGiven, RecallServed, ResultDrilled
from eventstore.query import recall_stream_events
from readmodels.item_domains import SECTIONS

KNOWLEDGE = SECTIONS.name
KEYWORD_FALSE_NEGATIVE_GATE = 0.20  # SwarmAI: at least this share of keyword false negatives ...
HYBRID_FALSE_POSITIVE_GATE = 0.10  # ... with less than this share of hybrid false positives
NOT_USEFUL_SIGNAL = frozenset({MEMORIES})  # domains whose results can be marked not useful
RECALL_STREAM_TYPES = tuple(t.type_name() for t in (RecallServed, RecallFeedbackGiven, ResultDrilled))



@dataclass
class DomainGaps:
    domain: str
    recalls: int = 0  # recalls with at least one result of this domain whose legs were recorded
    recalls_without_legs: int = 0  # results of this domain, none with legs (served before legs were recorded)
    recalls_with_use: int = 0  # ... of which a result was used
    recalls_keyword_missed_used: int = 0  # ... of which a vector-only result was used
    results: int = 0
    vector_only: int = 0
    vector_only_used: int = 0
    vector_only_not_useful: int = 0
    not_useful_signal: bool = False

    def _share(self, part: int, whole: int) -> float | None:
        return part / whole if whole else None

    @property
    def keyword_false_negatives(self) -> float | None:
        return self._share(self.recalls_keyword_missed_used, self.recalls)

    @property
    def keyword_false_negatives_among_used(self) -> float | None:
        return self._share(self.recalls_keyword_missed_used, self.recalls_with_use)

    @property
    def hybrid_false_positives(self) -> float | None:
        if not self.not_useful_signal:
            return None
        return self._share(self.vector_only_not_useful, self.vector_only)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "keyword_false_negatives": self.keyword_false_negatives,
                "keyword_false_negatives_among_used": self.keyword_false_negatives_among_used,
                "hybrid_false_positives": self.hybrid_false_positives,
                "gate": {"keyword_false_negatives_at_least": KEYWORD_FALSE_NEGATIVE_GATE,
                         "hybrid_false_positives_below": HYBRID_FALSE_POSITIVE_GATE}}


def result_key(domain: str, memory_id: Any, handle: dict[str, Any] | None) -> tuple[Any, ...]:
    """What names a result across its recall and the drills into it (a knowledge handle without its version: the
    section is its content)."""
    if memory_id:
        return domain, str(memory_id)
    h = handle or {}
    if "memory_id" in h:
        return domain, str(h["memory_id"])
    if domain == KNOWLEDGE:
        return domain, h.get("project"), h.get("path"), h.get("heading_path"), h.get("content_hash")
    return domain, repr(sorted((k, v) for k, v in h.items() if k != "version"))


def by_stream(rows: Iterable[Any]) -> Iterator[list[Any]]:
    """Rows in stream order, one list per stream."""
    current: list[Any] = []
    for row in rows:
        if current and row.stream_id != current[0].stream_id:
            yield current
            current = []
        current.append(row)
    if current:
        yield current


def add_recall(stats: dict[str, DomainGaps], events: list[Any]) -> None:
    """One recall stream's events (RecallServed, feedback, drills) counted into `stats`, by domain."""
    served = next((e.data for e in events if e.type == RecallServed.type_name()), None)
    if served is None:
        return
    verdicts: dict[tuple[Any, ...], str] = {}
    used: set[tuple[Any, ...]] = set()
    for e in events:
        if e.type == RecallFeedbackGiven.type_name():
            for item in e.data.get("items", []):
                verdicts.setdefault((MEMORIES, str(item["memory_id"])), item["verdict"])
        elif e.type == ResultDrilled.type_name():
            used.add(result_key(e.data.get("domain", ""), None, e.data.get("handle")))
    used |= {key for key, verdict in verdicts.items() if verdict == "used"}
    by_domain: dict[str, list[dict[str, Any]]] = {}
    for r in served.get("results", []):
        by_domain.setdefault(r.get("domain", MEMORIES), []).append(r)
    for domain, results in by_domain.items():
        s = stats.setdefault(domain, DomainGaps(domain, not_useful_signal=domain in NOT_USEFUL_SIGNAL))
        with_legs = [r for r in results if r.get("legs")]
        if not with_legs:
            s.recalls_without_legs += 1
            continue
        s.recalls += 1
        s.results += len(with_legs)
        any_used = missed_used = False
        for r in with_legs:
            key = result_key(domain, r.get("memory_id"), r.get("handle"))
            vector_only = r["legs"].get("keyword") is None and r["legs"].get("vector") is not None
            any_used |= key in used
            if vector_only:
                s.vector_only += 1
                s.vector_only_used += key in used
                s.vector_only_not_useful += verdicts.get(key) == "not_useful"
                missed_used |= key in used
        s.recalls_with_use += any_used
        s.recalls_keyword_missed_used += missed_used


def keyword_gaps(conn: Connection, tenant: str, since: datetime | None = None) -> list[DomainGaps]:
    """Per domain (by name), the keyword-gap figures of the tenant's recalls (served since `since`, when given)."""
    rows = recall_stream_events(conn, tenant, list(RECALL_STREAM_TYPES), RecallServed.type_name(), since)
    stats: dict[str, DomainGaps] = {}
    for events in by_stream(rows):
        add_recall(stats, events)
    return [stats[d] for d in sorted(stats)]


__all__ = ["HYBRID_FALSE_POSITIVE_GATE", "KEYWORD_FALSE_NEGATIVE_GATE", "RECALL_STREAM_TYPES", "DomainGaps",
           "add_recall", "by_stream", "keyword_gaps", "result_key"]
