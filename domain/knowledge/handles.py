"""What a knowledge section's statuses mean, and the section a result's handle names."""

from __future__ import annotations

import uuid
from typing import Any

from domain.events.knowledge import section_id
from domain.memory_status import RECALLABLE

LIVE = ("active", "dormant", "archived")  # held by its document's current version
RECALLED = RECALLABLE  # answered by default: the memories' rule (domain/memory_status.py)
HISTORY = ("replaced", "retired", "archived")  # answered only when history is asked for, ×recall.hybrid.HISTORY_FACTOR


def handle_section(tenant: str, handle: dict[str, Any] | None) -> uuid.UUID | None:
    """The section a knowledge handle {path, heading_path, content_hash, project} names, or None for a handle
    without the keys of one."""
    if not isinstance(handle, dict):
        return None
    path, heading, hash_ = handle.get("path"), handle.get("heading_path"), handle.get("content_hash")
    project = handle.get("project")
    if not (isinstance(path, str) and isinstance(heading, str) and isinstance(hash_, str)
            and (project is None or isinstance(project, str))):
        return None
    return section_id(tenant, project, path, heading, hash_)


__all__ = ["HISTORY", "LIVE", "RECALLED", "handle_section"]
