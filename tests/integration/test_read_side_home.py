"""The read side has one home: api/routes/ holds no SQL (read models are read through recall/, e.g.
recall/queries.py), and the log is read through eventstore/ (a stream, an event, a reader's progress)."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOT_YET: set[str] = set()
_LOG_READ = re.compile(r"\b(FROM|JOIN)\s+events\b", re.IGNORECASE)


def _sources(*layers: str) -> list[Path]:
    return [p for layer in layers for p in sorted((ROOT / layer).rglob("*.py"))]


def test_routes_hold_no_sql() -> None:
    offenders = [str(p.relative_to(ROOT)) for p in _sources("api")
                 if re.search(r"\btext\(|\bSELECT\b|\bFROM\s+\w+\s+WHERE\b", p.read_text())]
    assert offenders == []


def test_the_log_is_read_through_the_eventstore() -> None:
    offenders = [f"{p.relative_to(ROOT)}" for p in _sources("api", "cli", "services", "projections", "recall",
                                                            "deep_recall", "mcp_server", "workers", "domain", "infra")
                 if str(p.relative_to(ROOT)) not in NOT_YET and _LOG_READ.search(p.read_text())]
    assert offenders == []


def test_history_chain_through_the_read_model_query(engine, tenant) -> None:
    from funnel_support import project

    from domain.errors import NotFound
    from recall import queries
    from services.remember import MemoryInput, remember

    [first] = remember(engine, tenant, [MemoryInput(content="The office wifi password is amber-falcon-42",
                                                     must_keep=True)], {"source": "test", "actor": "test"})
    [second] = remember(engine, tenant, [MemoryInput(content="The office wifi password is now cobalt-heron-7",
                                                      must_keep=True, supersedes=first.memory_id,
                                                      reason="rotated")], {"source": "test", "actor": "test"})
    project(engine, second.position)
    with engine.connect() as conn:
        for asked in (first.memory_id, second.memory_id):
            found = queries.history(conn, tenant, asked)
            assert found.current == second.memory_id
            assert [m["memory_id"] for m in found.chain] == [first.memory_id, second.memory_id]
            assert [(s["memory_id"], s["superseded_by"], s["reason"]) for s in found.steps] == [
                (first.memory_id, second.memory_id, "rotated")]
        assert queries.memory(conn, tenant, first.memory_id)["status"] == "superseded"
        with pytest.raises(NotFound):
            queries.history(conn, "another-tenant", first.memory_id)
        with pytest.raises(NotFound):
            queries.memory(conn, tenant, uuid.uuid4())
