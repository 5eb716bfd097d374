"""Deep recall: POST /v1/deep_recall (a model's search code in a sandbox over the live APIs) and
GET /v1/blind_spots (the questions it could not answer, live for the scope)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from engramlog_client.models.common import Request, Response


class Budgets(Request):
    """Per-call budgets, each within the operator's maximum (default 15 iterations, 20 sub-calls, $0.50)."""

    iterations: int | None = None
    sub_calls: int | None = None
    cost_usd: float | None = None
    timeout_s: float | None = None


class DeepRecallIn(Request):
    question: str
    agent_id: str | None = None
    project: str | None = None
    session_id: str | None = None
    max_depth: int | None = None  # 1 (llm_query is a plain completion) to 3
    budgets: Budgets | None = None
    min_position: int | None = None  # default: the client's last written position (read-your-writes)


class DeepRecalled(Response):
    recall_id: uuid.UUID  # GET /v1/recalls/{id} shows how it got there
    answer: str | None = None
    shortcut: bool  # answered by the quick hybrid recall (3+ results scoring >= 0.8)
    cached: bool = False
    iterations: int
    sub_calls: int
    cost_usd: float
    tokens: dict[str, int] = {}
    stopped: str  # final | budget | timeout | error
    reason: str | None = None
    results: list[dict[str, Any]] = []  # the shortcut's results
    latency_ms: float | None = None
    position: int


class BlindSpot(Response):
    gap_id: uuid.UUID
    question: str
    kind: str
    priority: float
    registered_at: datetime
    expires_at: datetime
    recall_id: uuid.UUID
    reason: str


class BlindSpots(Response):
    blind_spots: list[BlindSpot]
