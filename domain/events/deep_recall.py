"""Deep recall's events: the audit of one deep recall (DeepRecallServed, its hit-log), a value its sandbox kept
with store() (DeepRecallStored), and a question it could not answer (BlindSpotRegistered, a knowledge gap).

Streams: a deep recall's own recall-<recall_id> (as every recall's); a store scope's deep-store-<scope_key>; a
scope's blind-spots-<scope_key>. The scope key is the SHA-256 of (agent, session, project), so a stream id stays
bounded whatever the scope's names.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, field_validator

from domain.events.base import MAX_SCOPE_CHARS, SystemEvent

DeepStop = Literal["final", "budget", "timeout", "error"]
MAX_QUESTION_CHARS = 4000
MAX_STORE_KEY_CHARS = 200
MAX_STORE_VALUE_BYTES = 64 * 1024  # as compact JSON
MAX_AUDIT_ITERATIONS = 64
MAX_AUDIT_SEARCHES = 1000  # recall ids of a deep recall's searches kept in its audit
MAX_AUDIT_SESSIONS = 1000  # session ids of its bootstrap snapshot


class DeepRecallServed(SystemEvent):
    """One deep recall, whole: the question, the shortcut or each iteration (its code, what it printed, each live
    call with its capped result), the sub-calls, tokens, cost, how it stopped and the answer.

    Each search it made (the shortcut's quick recall, the bootstrap's seeds, search() in the sandbox, nested loops'
    searches) is a recall of its own with its own RecallServed; their recall ids are here (`shortcut_recall_id`,
    `search_recall_ids` in order, and each search's live-call record's `recall_id`), so an analyst follows from
    the deep recall to each search's hit-log."""

    recall_id: uuid.UUID
    question: str = Field(max_length=MAX_QUESTION_CHARS)
    scope: dict[str, Any] = Field(default_factory=dict)
    shortcut: bool
    cached: bool = False
    answer: str | None = None
    stopped: DeepStop
    reason: str | None = None
    iterations: list[dict[str, Any]] = Field(default_factory=list, max_length=MAX_AUDIT_ITERATIONS)
    sub_calls: list[dict[str, Any]] = Field(default_factory=list)
    shortcut_results: list[dict[str, Any]] = Field(default_factory=list)
    shortcut_recall_id: uuid.UUID | None = None
    search_recall_ids: list[uuid.UUID] = Field(default_factory=list, max_length=MAX_AUDIT_SEARCHES)
    # The sessions its bootstrap snapshot listed or quoted: the privacy gate hides the audit when one is excluded
    # later (the snapshot's text is not in the audit, the model's printed output may be).
    bootstrap_sessions: list[str] = Field(default_factory=list, max_length=MAX_AUDIT_SESSIONS)
    models: dict[str, str | None] = Field(default_factory=dict)
    tokens: dict[str, int] = Field(default_factory=dict)
    cost_usd: float = 0.0
    budgets: dict[str, float] = Field(default_factory=dict)
    latency_ms: float
    # Set when the audit was over ENGRAMLOG_DEEP_AUDIT_BYTES: what was cut to fit (deep_recall/audit_size.py).
    audit_cut: str | None = None


def _compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


class DeepRecallStored(SystemEvent):
    """A JSON value a deep recall's sandbox kept with store(key, value), for later deep recalls of the same
    (tenant, agent, session, project)."""

    scope_key: str = Field(min_length=64, max_length=64)
    agent_id: str | None = Field(default=None, max_length=MAX_SCOPE_CHARS)
    session_id: str | None = Field(default=None, max_length=MAX_SCOPE_CHARS)
    project: str | None = Field(default=None, max_length=MAX_SCOPE_CHARS)
    key: str = Field(min_length=1, max_length=MAX_STORE_KEY_CHARS)
    value: Any = None
    recall_id: uuid.UUID

    @field_validator("value")
    @classmethod
    def _bounded(cls, value: Any) -> Any:
        try:
            size = len(_compact_json(value).encode())
        except (TypeError, ValueError):
            raise ValueError("store() keeps JSON values only") from None
        if size > MAX_STORE_VALUE_BYTES:
            raise ValueError(f"a stored value is at most {MAX_STORE_VALUE_BYTES} bytes as JSON, got {size}")
        return value


class BlindSpotRegistered(SystemEvent):
    """A deep recall found no useful answer: the question is a knowledge gap to explore, live until expires_at."""

    gap_id: uuid.UUID
    scope_key: str = Field(min_length=64, max_length=64)
    agent_id: str | None = Field(default=None, max_length=MAX_SCOPE_CHARS)
    session_id: str | None = Field(default=None, max_length=MAX_SCOPE_CHARS)
    project: str | None = Field(default=None, max_length=MAX_SCOPE_CHARS)
    question: str = Field(max_length=MAX_QUESTION_CHARS)
    kind: Literal["knowledge_gap"] = "knowledge_gap"
    priority: float = Field(ge=0, le=1)
    registered_at: datetime
    expires_at: datetime
    recall_id: uuid.UUID
    reason: str


def deep_scope_key(agent_id: str | None, session_id: str | None, project: str | None) -> str:
    """The SHA-256 naming a (agent, session, project) scope within a tenant (its store and blind-spot streams)."""
    return hashlib.sha256(_compact_json([agent_id, session_id, project]).encode()).hexdigest()


def deep_store_stream(scope_key: str) -> str:
    return f"deep-store-{scope_key}"


def blind_spot_stream(scope_key: str) -> str:
    return f"blind-spots-{scope_key}"
