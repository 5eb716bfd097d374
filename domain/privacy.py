"""The privacy gate's rule: what a tenant's privacy policy excludes from every route and every domain.

Pure: the policy is the payload of the tenant's latest PrivacyPolicySet event; each domain asks `excludes` of
each item it would answer (a memory's agent, project, session and tags; a section's document path and tags).

Path globs (`exclude_paths`) match a whole path or any folder above it: `*` and `?` stay within one path segment,
`**` spans segments, so "hr/**", "hr" and "**/salaries*" each exclude "hr/salaries-2026.md".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

POLICY_FIELDS = ("exclude_paths", "exclude_tags", "exclude_agents", "exclude_projects", "exclude_sessions")


@lru_cache(maxsize=4096)
def _glob(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def path_matches(path: str, pattern: str) -> bool:
    """True when `pattern` matches `path` or a folder above it."""
    pattern = pattern.strip("/")
    if not pattern:
        return False
    parts = path.strip("/").split("/")
    rx = _glob(pattern)
    return any(rx.match("/".join(parts[:n])) for n in range(len(parts), 0, -1))


@dataclass(frozen=True)
class PrivacyPolicy:
    exclude_paths: tuple[str, ...] = ()
    exclude_tags: tuple[str, ...] = ()
    exclude_agents: tuple[str, ...] = ()
    exclude_projects: tuple[str, ...] = ()
    exclude_sessions: tuple[str, ...] = ()

    @classmethod
    def of(cls, data: dict[str, Any] | None) -> PrivacyPolicy:
        data = data or {}
        return cls(**{f: tuple(data.get(f) or ()) for f in POLICY_FIELDS})

    def as_dict(self) -> dict[str, list[str]]:
        return {f: list(getattr(self, f)) for f in POLICY_FIELDS}

    @property
    def empty(self) -> bool:
        return not any(getattr(self, f) for f in POLICY_FIELDS)

    def excludes(self, *, path: str | None = None, tags: Iterable[str] = (), agent_id: str | None = None,
                 project: str | None = None, session_id: str | None = None) -> bool:
        """Whether an item with these attributes is hidden from every answer."""
        if self.empty:
            return False
        if agent_id is not None and agent_id in self.exclude_agents:
            return True
        if project is not None and project in self.exclude_projects:
            return True
        if session_id is not None and session_id in self.exclude_sessions:
            return True
        if self.exclude_tags and not set(self.exclude_tags).isdisjoint(tags):
            return True
        return path is not None and any(path_matches(path, p) for p in self.exclude_paths)

    def excludes_record(self, record: dict[str, Any]) -> bool:
        """`excludes` for a JSON record holding any of path, tags, agent_id, project, session_id (a memory row,
        a MemoryRecorded payload, a section)."""
        return self.excludes(path=record.get("path"), tags=record.get("tags") or (), agent_id=record.get("agent_id"),
                             project=record.get("project"), session_id=record.get("session_id"))


NO_POLICY = PrivacyPolicy()


# Each domain's item identity: the one rule its routes, its recall domain and the event export all ask.
def memory_excluded(policy: PrivacyPolicy, recorded: dict[str, Any]) -> bool:
    """A memory, by its recording (a memory row or its MemoryRecorded): agent, project, session, tags."""
    return policy.excludes_record({k: recorded.get(k) for k in ("agent_id", "project", "session_id", "tags")})


def document_excluded(policy: PrivacyPolicy, path: str, tags: Iterable[str] = (), project: str | None = None) -> bool:
    """A knowledge document (and each of its sections): its path, its current version's tags, its project."""
    return policy.excludes(path=path, tags=tags, project=project)


def session_excluded(policy: PrivacyPolicy, session_id: str, agent_id: str | None = None,
                     project: str | None = None) -> bool:
    """A session (and each of its messages): its id, and its agent and project (its first append's)."""
    return policy.excludes(session_id=session_id, agent_id=agent_id, project=project)


def transcript_excluded(policy: PrivacyPolicy, transcript_id: str) -> bool:
    """A transcript (and each of its chunks): its id, which exclude_sessions names."""
    return policy.excludes(session_id=transcript_id)


def code_file_excluded(policy: PrivacyPolicy, repo: str, path: str) -> bool:
    """A repository's source file (and each of its symbols): the path `<repo>/<file path>`."""
    return policy.excludes(path=f"{repo}/{path}")


def scope_excluded(policy: PrivacyPolicy, scope: dict[str, Any]) -> bool:
    """A recall's or a deep recall's scope (agent, project, session): one naming an excluded one is hidden whole."""
    return policy.excludes(**{k: v for k in ("agent_id", "project", "session_id")
                              if isinstance(v := scope.get(k), str)})


def loosened_or_same(now: PrivacyPolicy, then: PrivacyPolicy) -> bool:
    """Whether `now` excludes nothing `then` did not (each of its entries is one of then's): what was answered
    under `then` holds nothing `now` hides."""
    return all(set(getattr(now, f)) <= set(getattr(then, f)) for f in POLICY_FIELDS)

__all__ = ["NO_POLICY", "POLICY_FIELDS", "PrivacyPolicy", "code_file_excluded", "document_excluded",
           "loosened_or_same", "memory_excluded", "path_matches", "scope_excluded", "session_excluded",
           "transcript_excluded"]
