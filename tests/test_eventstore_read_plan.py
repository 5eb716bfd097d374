"""The projectors' gap-safe read walks the (tx_id, position) index: no batch sorts the log past its checkpoint.

A bare `ORDER BY tx_id` there once meant the output column `tx_id::text::bigint`, which no index is ordered
by: every batch sorted (or seq-scanned) the whole log past the checkpoint, and projection slowed down as the
log grew. The plan is checked both as psycopg's prepared statements may get it (generic, EXPLAIN GENERIC_PLAN)
and as a one-off execution gets it (custom). Sorts, sequential and bitmap scans are priced out so that the test
table's small size does not decide the plan: what is checked is that the index can give the order, so no plan
needs a sort (before the fix every plan had one). On a 1M-event table the planner picks this walk by itself
(0.6 ms a batch against 45 ms for the sorting plan; see bench/projection.py for rates by log size).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from sqlalchemy import text

from eventstore import read

PARAMS = {"tx": 0, "pos": 0, "types": ["MemoryRecorded", "MemoryAdmitted"], "limit": 500,
          "until_tx": 2**40, "until_pos": 2**40}


def nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    out = [plan]
    for child in plan.get("Plans", []):
        out.extend(nodes(child))
    return out


def numbered(sql: str) -> tuple[str, list[str]]:
    """`:name` placeholders as $1, $2 ... (casts such as `::text` untouched), and the names in order."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    return re.sub(r"(?<!:):(\w+)", number, sql), names


def explain(conn: Any, statement: Any, generic: bool) -> dict[str, Any]:
    conn.execute(text("SET LOCAL enable_seqscan = off"))
    conn.execute(text("SET LOCAL enable_bitmapscan = off"))
    conn.execute(text("SET LOCAL enable_sort = off"))
    conn.execute(text("SET LOCAL enable_incremental_sort = off"))
    if generic:
        sql, _ = numbered(statement.text)
        raw = conn.connection.driver_connection
        row = raw.execute("EXPLAIN (GENERIC_PLAN, FORMAT JSON) " + sql).fetchone()
    else:
        row = conn.execute(text("EXPLAIN (FORMAT JSON) " + statement.text), PARAMS).first()
    doc = row[0] if not isinstance(row[0], str) else json.loads(row[0])
    return doc[0]["Plan"]


@pytest.mark.parametrize("generic", [True, False], ids=["generic plan", "custom plan"])
@pytest.mark.parametrize("name", ["_READ", "_READ_UNTIL"])
def test_gap_safe_read_walks_the_tx_position_index_without_sorting(engine, name, generic):
    with engine.connect() as conn, conn.begin():
        plan = explain(conn, getattr(read, name), generic)
    kinds = [n["Node Type"] for n in nodes(plan)]
    assert "Sort" not in kinds and "Incremental Sort" not in kinds, kinds
    scans = [n for n in nodes(plan) if n["Node Type"] in ("Index Scan", "Index Only Scan")]
    assert [s.get("Index Name") for s in scans] == ["events_tx_position"], kinds
    assert plan["Node Type"] == "Limit"


def test_gap_safe_read_answers_in_tx_position_order(engine, tenant):
    """The order the index gives is the order the reader needs: by transaction id, then position."""
    import uuid

    from domain.events import NewEvent, memory_stream
    from eventstore.append import append

    for _ in range(3):
        with engine.begin() as conn:
            mids = [uuid.uuid4() for _ in range(4)]
            append(conn, tenant, [NewEvent("MemoryRecorded", memory_stream(m), {
                "memory_id": str(m), "content": "x", "kind": "observation", "agent_id": None, "project": None,
                "session_id": None, "tags": [], "metadata": {}}, expected_version=0) for m in mids], {})
    with engine.connect() as conn:
        events = read.read_after(conn, read.Checkpoint(), ["MemoryRecorded"], 100_000)
    keys = [(e.tx_id, e.position) for e in events]
    assert keys == sorted(keys)
    mine = [e for e in events if e.tenant == tenant]
    assert len(mine) == 12
