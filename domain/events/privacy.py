"""The tenant's privacy policy: what no route and no recall domain answers (the rule: domain/privacy.py).

Stream: policy-privacy (one per tenant). Each PrivacyPolicySet replaces the whole policy; the latest is in force.
An operator's write (an OperatorEvent): only PUT /v1/policy/privacy appends it.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from domain.events.base import OperatorEvent

PRIVACY_STREAM = "policy-privacy"
MAX_POLICY_ENTRIES = 256  # per list
MAX_POLICY_ENTRY_CHARS = 512


def _entry(value: str) -> str:
    if not value:
        raise ValueError("an entry must not be empty")
    if "\x00" in value:
        raise ValueError("an entry must not contain NUL (\\u0000)")
    return value


def _glob(value: str) -> str:
    # A path glob matches document paths (relative, '/'-separated): one that can match nothing is refused.
    _entry(value)
    if not value.strip("/"):
        raise ValueError(f"path glob {value!r} names no path")
    if "\\" in value:
        raise ValueError(f"path glob {value!r}: paths are '/'-separated, a backslash is not a separator")
    if any(part in (".", "..") for part in value.strip("/").split("/")):
        raise ValueError(f"path glob {value!r}: '.' and '..' segments never occur in a document path")
    return value


def _distinct(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))  # the same entry twice excludes nothing more: kept once, in order


Entry = Annotated[str, Field(max_length=MAX_POLICY_ENTRY_CHARS), AfterValidator(_entry)]
Glob = Annotated[str, Field(max_length=MAX_POLICY_ENTRY_CHARS), AfterValidator(_glob)]
Entries = Annotated[list[Entry], Field(max_length=MAX_POLICY_ENTRIES), AfterValidator(_distinct)]
Globs = Annotated[list[Glob], Field(max_length=MAX_POLICY_ENTRIES), AfterValidator(_distinct)]


class PrivacyPolicySet(OperatorEvent):
    """An operator set the tenant's privacy policy (all five lists; an empty list excludes nothing)."""

    exclude_paths: Globs = Field(default_factory=list)
    exclude_tags: Entries = Field(default_factory=list)
    exclude_agents: Entries = Field(default_factory=list)
    exclude_projects: Entries = Field(default_factory=list)
    exclude_sessions: Entries = Field(default_factory=list)


__all__ = ["MAX_POLICY_ENTRIES", "MAX_POLICY_ENTRY_CHARS", "PRIVACY_STREAM", "PrivacyPolicySet"]
