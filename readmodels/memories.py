"""The memories read model's columns: those a memory's version holds (memory_versions, kept by
projections/memory_versions.py), the same in both tables, and what the recall funnel and GET /v1/memories/{id}
read as of a position (recall/timeframe.py, recall/queries.py); and their BM25 postings."""

from __future__ import annotations

from readmodels.postings import Postings

MEMORY_COLUMNS = ("memory_id, content, content_hash, kind, agent_id, project, session_id, tags, metadata, occurred_at,"
                  " recorded_at, status, position, memory_type, salience, route, confidence, reinforced_count,"
                  " supersedes, superseded_by, merged_into, status_changed_at")

# The keyword projector's postings of memories (projections/keyword.py), scored by recall/keyword.py.
MEMORY_POSTINGS = Postings("keyword_postings", "keyword_terms", "keyword_stats", "memory_id", "keyword_term_blocks")

__all__ = ["MEMORY_COLUMNS", "MEMORY_POSTINGS"]
