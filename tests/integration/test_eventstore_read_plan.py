"""The projectors' gap-safe read costs one batch, whatever the log's length and whatever share of it the
projector's types are.

Twice it did not: a bare `ORDER BY tx_id` meant the output column `tx_id::text::bigint`, so every batch sorted
(or seq-scanned) the whole log past the checkpoint; and walking the (tx_id, position) index with a type filter
read the whole rest of the log on every poll of a projector whose types are rare. The statement `read_after`
really executes is captured and explained, both as psycopg's prepared statements may get it (generic plan,
EXPLAIN GENERIC_PLAN) and as a one-off execution gets it (custom plan). Every scan of `events` must then be an
index range bounded by type and checkpoint directly under a LIMIT, or a primary-key lookup: no plan can read
(or sort) more of the log than a batch. On a 1M-event table a batch of 500 takes ~1.5 ms this way (45 ms with
the sort; an empty poll of a rare-type projector 0.1 ms); bench/projection.py --sizes prints rates by log size.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import pytest
from sqlalchemy import event, text

from domain.events import NewEvent, memory_stream
from eventstore import read
from eventstore.append import append

TYPE_SETS = {
    "common types": ("MemoryRecorded", "MemoryAdmitted", "MemoryReinforced"),
    "rare types": ("RecallFeedbackGiven", "MemorySuperseded", "EdgeAdjusted"),
}


def captured(engine: Any, until: read.Checkpoint | None, types: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
    """The SQL text and parameters read_after sends to the driver."""
    seen: list[tuple[str, dict[str, Any]]] = []

    def grab(conn, cursor, statement, parameters, context, executemany):
        seen.append((statement, dict(parameters)))

    with engine.connect() as conn:
        event.listen(conn, "before_cursor_execute", grab)
        read.read_after(conn, read.Checkpoint(1, 1), types, 500, until=until)
        event.remove(conn, "before_cursor_execute", grab)
    (statement, params), *keys = seen  # then, where the batch holds sealed events, the codec's key lookup
    assert all("subject_keys" in k for k, _ in keys)
    return statement, params


def numbered(statement: str) -> str:
    """psycopg's %(name)s placeholders as $1, $2 ... for EXPLAIN (GENERIC_PLAN)."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    return re.sub(r"%\((\w+)\)s", number, statement)


def explain(engine: Any, statement: str, params: dict[str, Any], generic: bool) -> dict[str, Any]:
    with engine.connect() as conn:
        raw = conn.connection.driver_connection
        # The test table is small: without this the planner may rightly scan it whole. What is checked is the
        # shape the statement allows, the one it takes on a large log.
        raw.execute("SET LOCAL enable_seqscan = off")
        raw.execute("SET LOCAL enable_bitmapscan = off")
        if generic:
            row = raw.execute("EXPLAIN (GENERIC_PLAN, FORMAT JSON) " + numbered(statement)).fetchone()
        else:
            row = raw.execute("EXPLAIN (FORMAT JSON) " + statement, params).fetchone()
        conn.rollback()
    doc = row[0] if not isinstance(row[0], str) else json.loads(row[0])
    return doc[0]["Plan"]


def walk(plan: dict[str, Any], parent: dict[str, Any] | None = None):
    yield plan, parent
    for child in plan.get("Plans", []):
        yield from walk(child, plan)


@pytest.mark.parametrize("generic", [True, False], ids=["generic plan", "custom plan"])
@pytest.mark.parametrize("until", [False, True], ids=["read", "read until"])
@pytest.mark.parametrize("type_set", list(TYPE_SETS))
def test_gap_safe_read_is_bounded_index_ranges(engine, generic, until, type_set):
    statement, params = captured(engine, read.Checkpoint(2**40, 2**40) if until else None, TYPE_SETS[type_set])
    plan = explain(engine, statement, params, generic)
    nodes = list(walk(plan))
    scans = [(n, p) for n, p in nodes if n.get("Relation Name") == "events"]
    assert scans, plan
    for node, parent in scans:
        kind, index, cond = node["Node Type"], node.get("Index Name"), node.get("Index Cond", "")
        assert kind in ("Index Scan", "Index Only Scan"), (kind, index)
        if index == "events_pkey":
            continue
        assert parent is not None and parent["Node Type"] == "Limit", parent  # stops after a batch
        if index == "events_tx_position" and type_set == "common types":
            # Types that make up most of the log: walking (tx_id, position) from the checkpoint and filtering
            # by type also reads about a batch (the planner picks it when statistics say so, as in a full run).
            assert "ROW(tx_id" in cond, cond
            continue
        assert index == "events_type_tx_position", index
        assert "type =" in cond and "ROW(tx_id" in cond, cond  # bounded by its type and the checkpoint


def test_gap_safe_read_answers_in_tx_position_order(engine, tenant):
    """Merged from per-type ranges, the batch is still in (transaction id, position) order, without repeats."""
    for kind in ("MemoryRecorded", "MemoryAdmitted", "MemoryRecorded"):
        with engine.begin() as conn:
            events = []
            for _ in range(3):
                mid = uuid.uuid4()
                events.append(NewEvent("MemoryRecorded", memory_stream(mid), {
                    "memory_id": str(mid), "content": "x", "kind": "observation", "agent_id": None,
                    "project": None, "session_id": None, "tags": [], "metadata": {}}, expected_version=0))
                if kind == "MemoryAdmitted":
                    events.append(NewEvent("MemoryAdmitted", memory_stream(mid), {
                        "memory_id": str(mid), "disposition": "active", "salience": 1.0, "kind": "fact",
                        "route": "knowledge", "reason": "test", "inputs": {}}))
            append(conn, tenant, events, {})
    with engine.connect() as conn:
        everything = read.read_after(conn, read.Checkpoint(), ["MemoryRecorded", "MemoryAdmitted"], 1_000_000)
        paged, after = [], read.Checkpoint()
        while batch := read.read_after(conn, after, ["MemoryAdmitted", "MemoryRecorded"], 4):
            paged += batch
            after = read.Checkpoint(batch[-1].tx_id, batch[-1].position)
        direct = conn.execute(text("SELECT position FROM events WHERE type IN ('MemoryRecorded', 'MemoryAdmitted') "
                                   "AND tx_id < pg_snapshot_xmin(pg_current_snapshot()) "
                                   "ORDER BY events.tx_id, events.position")).scalars().all()
    keys = [(e.tx_id, e.position) for e in everything]
    assert keys == sorted(set(keys))
    assert [e.position for e in everything] == [e.position for e in paged] == direct
    assert len([e for e in everything if e.tenant == tenant]) == 12
