"""Inputs of the session routes (api/routes/sessions.py), and of the MCP tools that derive theirs from them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from annotated_types import Ge, Le
from pydantic import BaseModel, ConfigDict, Field

from domain.events.sessions import SessionRole
from infra.settings import get_settings

_OWN = ("message_id", "role", "content", "name", "tool_call_id", "tool_calls", "tool_name", "created_at", "sent",
        "checkpoint", "metadata")


class MessageIn(BaseModel):
    model_config = ConfigDict(extra="allow")

    message_id: str | None = None
    role: SessionRole
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_call_id: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_name: str | None = None
    created_at: datetime | None = None
    sent: bool = True
    checkpoint: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)

    def as_message(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in _OWN}
        extra = {k: v for k, v in (self.model_extra or {}).items() if v not in (None, "", [], {})}
        if extra:
            out["metadata"] = {**self.metadata, "openai": extra}
        return out


class BatchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    messages: list[dict[str, Any]]
    agent_id: str | None = None
    project: str | None = None


# GET /v1/sessions/{id}/resume?budget_tokens=: the operator's bounds (services/sessions.py resume_budget checks the
# same settings for every caller); omitted: ENGRAMLOG_RESUME_BUDGET_DEFAULT.
BudgetTokens = Annotated[int | None, Ge(get_settings().sessions.resume_budget_min),
                         Le(get_settings().sessions.resume_budget_max)]

__all__ = ["BatchIn", "BudgetTokens", "MessageIn"]
