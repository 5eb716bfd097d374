"""Scope filters shared by both recall legs: tenant always, then agent, project, session, kinds."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scope:
    tenant: str
    agent_id: str | None = None
    project: str | None = None
    session_id: str | None = None
    kinds: tuple[str, ...] = ()

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
        return " AND ".join(clauses), params

    def as_dict(self) -> dict[str, object]:
        return {"agent_id": self.agent_id, "project": self.project, "session_id": self.session_id,
                "kinds": list(self.kinds)}
