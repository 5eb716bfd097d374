"""Scope filters shared by every recall leg: tenant always, then agent, project, session, kinds, and the privacy
policy's excluded agents, projects and sessions (so an excluded memory never takes a candidate's place)."""

from __future__ import annotations

from dataclasses import dataclass

from domain.privacy import NO_POLICY, PrivacyPolicy

_EXCLUDED = (("agent_id", "exclude_agents"), ("project", "exclude_projects"), ("session_id", "exclude_sessions"))


@dataclass(frozen=True)
class Scope:
    tenant: str
    agent_id: str | None = None
    project: str | None = None
    session_id: str | None = None
    kinds: tuple[str, ...] = ()
    policy: PrivacyPolicy = NO_POLICY

    def where(self, alias: str) -> tuple[str, dict[str, object]]:
        clauses = [f"{alias}.tenant = :tenant"]
        params: dict[str, object] = {"tenant": self.tenant}
        for column in ("agent_id", "project", "session_id"):
            value = getattr(self, column)
            if value is not None:
                clauses.append(f"{alias}.{column} = :{column}")
                params[column] = value
        if self.kinds:
            clauses.append(f"{alias}.kind = ANY(:kinds)")
            params["kinds"] = list(self.kinds)
        for column, field_ in _EXCLUDED:
            excluded = getattr(self.policy, field_)
            if excluded:
                clauses.append(f"({alias}.{column} IS NULL OR {alias}.{column} <> ALL(:x_{column}))")
                params[f"x_{column}"] = list(excluded)
        return " AND ".join(clauses), params

    def as_dict(self) -> dict[str, object]:
        return {"agent_id": self.agent_id, "project": self.project, "session_id": self.session_id,
                "kinds": list(self.kinds)}
