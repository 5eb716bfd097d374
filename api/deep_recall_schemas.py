"""Request body of POST /v1/deep_recall (the route, and the MCP tool that derives its inputs from it)."""

from __future__ import annotations

from pydantic import Field, field_validator

from api.schemas import Body, MinPosition
from domain.events import ScopeText
from domain.events.deep_recall import MAX_QUESTION_CHARS


class BudgetsIn(Body):
    """Per-request budgets; each within the operator's maximum (ENGRAMLOG_DEEP_CAP_*)."""

    iterations: int | None = None
    sub_calls: int | None = None
    cost_usd: float | None = None
    timeout_s: float | None = None


class DeepRecallIn(Body):
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    agent_id: ScopeText | None = None
    project: ScopeText | None = None
    session_id: ScopeText | None = None
    max_depth: int = Field(default=1, ge=1, le=3)
    budgets: BudgetsIn = Field(default_factory=BudgetsIn)
    min_position: MinPosition = None  # read-your-writes: its quick recall and searches see what was written there

    @field_validator("question", "agent_id", "project", "session_id")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        # The question and scope go into the audit event (PostgreSQL's JSON cannot hold \u0000): a 500 before.
        if value is not None and "\x00" in value:
            raise ValueError("must not contain NUL (\\u0000)")
        return value


__all__ = ["BudgetsIn", "DeepRecallIn"]
