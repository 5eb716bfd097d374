"""The hit-log: what each recall answered (every domain's results), what its client drilled into, and what it
said of them.

Stream: recall-<recall_id>, holding the RecallServed, then the drills into its results and the feedback given
on it. A drill with no recall behind it (an agent fetching a section by its handle) has a stream of its own.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import Field, model_validator

from domain.events.base import EventSchema, SystemEvent

# Where a hit came from: `hot` a cache, `index` a search, `drill` an exact-slice fetch by handle.
HitLayer = Literal["hot", "index", "drill"]
MEMORIES = "memories"


class RecalledMemory(EventSchema):
    """One result of a recall, in any domain. A memory is named by its id; any other domain's result by its
    handle (the keys its domain defines: a knowledge section's path, heading path, content hash, version)."""

    rank: int
    score: float
    domain: str = MEMORIES
    memory_id: uuid.UUID | None = None
    handle: dict[str, Any] | None = None
    layer: HitLayer = "index"
    # The result's per-leg scores where the domain has legs ({"keyword": .., "vector": ..}), for the keyword-gap
    # analysis (`engramlog analyze keyword-gaps`).
    legs: dict[str, float | None] | None = None
    # The calibrated chance it answers the query (domain/relevance.py), the scale all domains share; absent from
    # hit-log events written before it.
    relevance: float | None = None

    @model_validator(mode="after")
    def _named(self) -> RecalledMemory:
        if self.domain == MEMORIES and self.memory_id is None:
            raise ValueError("a memory result names its memory_id")
        if self.domain != MEMORIES and self.handle is None:
            raise ValueError(f"a {self.domain} result names its handle")
        return self


class RecallServed(SystemEvent):
    """The hit-log: one recall answered (one event for a whole fan-out over domains)."""

    recall_id: uuid.UUID
    query: str
    k: int
    scope: dict[str, Any] = Field(default_factory=dict)
    results: list[RecalledMemory] = Field(default_factory=list)
    latency_ms: float
    # The funnel's explanation (clock, resolved query, per-stage timings/counts/knobs, abstention verdict,
    # per-result stage scores); absent from hit-log events written before the funnel.
    explanation: dict[str, Any] = Field(default_factory=dict)
    # The domains asked, in activation order (a single-domain recall: ["memories"]).
    domains: list[str] = Field(default_factory=lambda: [MEMORIES])


class ResultDrilled(SystemEvent):
    """An agent fetched one result's exact slice by its handle (the drill). Stream: its recall's, when it names
    one; else drill-<drill_id>."""

    drill_id: uuid.UUID
    domain: str
    handle: dict[str, Any]
    recall_id: uuid.UUID | None = None
    layer: HitLayer = "drill"


class FeedbackItem(EventSchema):
    memory_id: uuid.UUID
    verdict: Literal["used", "not_useful"]


class RecallFeedbackGiven(SystemEvent):
    """A client said which recalled memories it used."""

    recall_id: uuid.UUID
    items: list[FeedbackItem] = Field(min_length=1, max_length=100)


def recall_stream(recall_id: uuid.UUID) -> str:
    return f"recall-{recall_id}"


def drill_stream(drill_id: uuid.UUID) -> str:
    return f"drill-{drill_id}"
