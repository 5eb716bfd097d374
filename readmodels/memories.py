"""The memories read model's columns: those a memory's version holds (memory_versions, kept by
projections/memory_versions.py), the same in both tables, and what the recall funnel and GET /v1/memories/{id}
read as of a position (recall/timeframe.py, recall/queries.py)."""

from __future__ import annotations

MEMORY_COLUMNS = ("memory_id, content, content_hash, kind, agent_id, project, session_id, tags, metadata, occurred_at,"
                  " recorded_at, status, position, memory_type, salience, route, confidence, reinforced_count,"
                  " supersedes, superseded_by, merged_into, status_changed_at")

__all__ = ["MEMORY_COLUMNS"]
