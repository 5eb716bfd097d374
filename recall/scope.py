"""Scope filters shared by every recall leg (and the governor's vector search): tenant always, then agent,
project, session, kinds, and the privacy policy's excluded agents, projects and sessions (so an excluded memory
never takes a candidate's place). For recall a column left None matches any value; the governor's scope is exact,
so there None means IS NULL (`none_is_null`, per column, said where the scope is made)."""

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
    none_is_null: frozenset[str] = frozenset()  # columns where None means IS NULL, not "any value"

    @classmethod
    def exactly(cls, tenant: str, agent_id: str | None, project: str | None) -> Scope:
        """The governor's scope: this agent and this project, None included (IS NULL); any session and kind."""
        return cls(tenant, agent_id, project, none_is_null=frozenset({"agent_id", "project"}))

    @property
    def whole_tenant(self) -> bool:
        """Whether the scope is the tenant's every row but what a privacy policy excludes (no agent, project, session
        or kind named, no IS NULL): a leg may then filter after ranking, most rows passing."""
        return (self.agent_id is None and self.project is None and self.session_id is None and not self.kinds
                and not self.none_is_null)

    @property
    def unfiltered(self) -> bool:
        """Whether the scope is the tenant's every row: whole, and no privacy policy excluding agents, projects or
        sessions (a count kept per tenant sizes it)."""
        return self.whole_tenant and not any(getattr(self.policy, field_) for _, field_ in _EXCLUDED)

    def where(self, alias: str) -> tuple[str, dict[str, object]]:
        clauses = [f"{alias}.tenant = :tenant"]
        params: dict[str, object] = {"tenant": self.tenant}
        for column in ("agent_id", "project", "session_id"):
            value = getattr(self, column)
            if value is not None:
                clauses.append(f"{alias}.{column} = :{column}")
                params[column] = value
            elif column in self.none_is_null:
                clauses.append(f"{alias}.{column} IS NULL")
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


def later_width(n: int) -> int:
    """How many of a leg's best-ranked rows its filters are looked up for when it filters after ranking, to keep n
    (the vector leg's status-later search, the keyword leg's filter-later plan)."""
    return 2 * n + 20
