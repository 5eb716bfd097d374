"""Sessions (POST /v1/sessions/{id}/messages, GET /v1/sessions/{id}/resume) and deep recall (POST /v1/deep_recall)."""

from __future__ import annotations

import uuid
from typing import Any

from engramlog_client.models.common import Request, Response


class MessagesIn(Request):
    """A batch of OpenAI-style chat messages ({role, content, ...}; message_id, created_at, sent optional)."""

    messages: list[dict[str, Any]]
    agent_id: str | None = None
    project: str | None = None


class MessagesAppended(Response):
    session_id: str
    message_ids: list[str]
    position: int


class ResumeContext(Response):
    session_id: str
    budget_tokens: int | None = None
    tokens: int | None = None
    items: Any = None
    dropped: Any = None
    last_position: int | None = None
    context: str  # the text to put in front of the model


class DeepRecallIn(Request):
    question: str
    agent_id: str | None = None
    project: str | None = None
    session_id: str | None = None
    max_depth: int | None = None
    budgets: dict[str, Any] | None = None


class DeepRecalled(Response):
    recall_id: uuid.UUID
    answer: str | None = None
    shortcut: bool = False
    iterations: int = 0
    sub_calls: int = 0
    cost_usd: float = 0.0
    tokens: dict[str, int] = {}
    stopped: str | None = None  # final | budget | timeout | error
    reason: str | None = None
    results: list[dict[str, Any]] = []
    position: int | None = None
