"""The tenant's privacy policy: PUT/GET /v1/policy/privacy (operators set it)."""

from __future__ import annotations

from datetime import datetime

from engramlog_client.models.common import Request, Response


class PrivacyPolicyIn(Request):
    exclude_paths: list[str] = []
    exclude_tags: list[str] = []
    exclude_agents: list[str] = []
    exclude_projects: list[str] = []
    exclude_sessions: list[str] = []

    def body(self) -> dict[str, list[str]]:
        return self.model_dump(mode="json")  # the whole policy: every list is sent


class PrivacyPolicy(Response):
    exclude_paths: list[str] = []
    exclude_tags: list[str] = []
    exclude_agents: list[str] = []
    exclude_projects: list[str] = []
    exclude_sessions: list[str] = []
    position: int | None = None  # of the PrivacyPolicySet in force; None: never set
    updated_at: datetime | None = None
