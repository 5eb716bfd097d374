"""Consolidation on real PostgreSQL with real embeddings: one cycle clusters, links, bridges and merges
near-duplicates without losing them; the report is stored as ConsolidationCompleted; a second cycle in a row
changes nothing (it appends only its ConsolidationCompleted, with all-zero counts); scopes are respected;
faint old Hebbian edges are forgotten; a rebuild reproduces every table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from lifecycle_support import (
    events_of,
    feedback,
    head,
    record,
    rows,
    served,
    statuses,
    sync,
    types_after,
    verify_tenant,
)
from sqlalchemy import text

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ["The deploy failed because the database migration ran twice on the replica.",
          "The deploy failed because the database migration ran twice on the replica",
          "Deployments must run database migrations exactly once, on the primary."]
CAT = ["Alice adopted a grey cat named Biscuit last spring.",
       "Biscuit, Alice's cat, is afraid of the vacuum cleaner."]
TEA = ["Bob prefers green tea over coffee in the morning.",
       "Bob prefers green tea over coffee in the mornings.",
       "Bob drinks a cup of green tea every morning before work."]
LONER = ["The quarterly budget review moved from Tuesday to Thursday."]


def db_now(engine):
    with engine.connect() as conn:
        return conn.execute(text("SELECT now()")).scalar_one()


def settings_with(**changes: object):
    from infra.settings import get_settings, replace

    return replace(get_settings(), **changes)


def test_consolidation_merges_without_loss_and_a_second_run_changes_nothing(engine, tenant) -> None:
    from projections.rebuild import verify
    from projections.registry import PROJECTORS
    from workers.consolidation import consolidate

    deploy = record(engine, tenant, DEPLOY, agent_id="ag1")
    cat = record(engine, tenant, CAT, agent_id="ag1")
    tea = record(engine, tenant, TEA, agent_id="ag1")
    loner = record(engine, tenant, LONER, agent_id="ag1")
    [elsewhere] = record(engine, tenant, DEPLOY[:1], agent_id="ag2")  # same words, another agent's scope
    served(engine, tenant, [deploy[1]])  # the newer wording is the more used one: it is kept
    r = served(engine, tenant, [cat[0], deploy[2]])
    feedback(engine, tenant, r, used=[cat[0], deploy[2]])  # a Hebbian edge across topics
    sync(engine)
    edges_before = rows(engine, "memory_edges", tenant, "source_id, target_id, kind")
    assert len(edges_before) == 1

    settings = settings_with(consolidation_bridge_min=0.1)
    clock = db_now(engine)
    result = consolidate(engine, clock, tenant=tenant, settings=settings)
    [run] = result.runs
    changes = run.report["changes"]
    assert changes["merged"] == 2  # the deploy and the tea near-duplicates
    assert changes["strengthened"] >= 2 and changes["bridged"] >= 1
    assert run.report["scopes"] == 2 and run.report["clusters"] >= 3

    # Merged, not lost: status 'merged', pointing at the kept memory, content and log untouched.
    status = statuses(engine, tenant)
    assert status[deploy[0]] == "merged" and status[deploy[1]] == "active"
    assert status[tea[1]] == "merged" and status[tea[0]] == "active"
    assert status[elsewhere] == "active" and status[loner[0]] == "active"
    with engine.connect() as conn:
        merged = dict(conn.execute(text("SELECT memory_id, merged_into FROM memories WHERE tenant = :t "
                                        "AND merged_into IS NOT NULL"), {"t": tenant}).all())
        contents = dict(conn.execute(text("SELECT memory_id, content FROM memories WHERE tenant = :t"),
                                     {"t": tenant}).all())
    assert merged == {deploy[0]: deploy[1], tea[1]: tea[0]}
    assert contents[deploy[0]] == DEPLOY[0] and contents[deploy[1]] == DEPLOY[1]  # kept wording unchanged
    recorded = {e.data["memory_id"] for e in events_of(engine, tenant, ["MemoryRecorded"])}
    assert {str(deploy[0]), str(tea[1])} <= recorded
    [merge_event] = [e for e in events_of(engine, tenant, ["MemoriesMerged"]) if e.data["memory_id"] == str(deploy[1])]
    assert merge_event.data["merged_ids"] == [str(deploy[0])] and merge_event.data["similarity"] > 0.85
    assert merge_event.metadata["actor"] == "system:scheduler"

    # Edges: semantic inside clusters, none touching a merged memory; the report is the stored event.
    edges_after = rows(engine, "memory_edges", tenant, "source_id, target_id, kind")
    kinds = [e[3] for e in edges_after]
    assert kinds.count("semantic") >= 3 and kinds.count("hebbian") == 1
    assert not any(deploy[0] in e[1:3] or tea[1] in e[1:3] for e in edges_after)
    [completed] = events_of(engine, tenant, ["ConsolidationCompleted"])
    assert completed.data["report"] == json.loads(json.dumps(run.report))
    assert completed.data["run_id"] == str(run.run_id) and completed.stream_id == f"consolidation-{run.run_id}"

    # Twice in a row: the second cycle appends only its ConsolidationCompleted, with all-zero counts.
    memories_after = rows(engine, "memories", tenant, "memory_id")
    before = head(engine, tenant)
    second = consolidate(engine, clock + timedelta(minutes=1), tenant=tenant, settings=settings)
    assert all(v == 0 for v in second.runs[0].report["changes"].values())
    assert types_after(engine, tenant, before) == ["ConsolidationCompleted"]
    assert rows(engine, "memory_edges", tenant, "source_id, target_id, kind") == edges_after
    assert rows(engine, "memories", tenant, "memory_id") == memories_after

    # Replaying the log reproduces the merges and the edges exactly.
    assert verify_tenant(engine, "memories", tenant) == {"memories": 0, "memory_history": 0, "memory_versions": 0}
    for name in ("edges", "activity"):
        assert verify(engine, PROJECTORS[name], batch_size=50).identical


def test_old_unused_hebbian_edges_are_forgotten(engine, tenant) -> None:
    from workers.consolidation import consolidate

    a, b = record(engine, tenant, ["The staging server restarts every night at two.",
                                   "Marta keeps the office plants alive with a watering rota."])
    r = served(engine, tenant, [a, b])
    feedback(engine, tenant, r, used=[a, b])
    sync(engine)
    assert [e[3] for e in rows(engine, "memory_edges", tenant, "source_id")] == ["hebbian"]
    now = db_now(engine)
    # A week on the edge has decayed a little but is young: kept.
    assert consolidate(engine, now + timedelta(days=8), tenant=tenant).runs[0].report["changes"]["forgotten"] == 0
    # 200 days on, untouched: decayed far below the floor, old and idle: forgotten; the memories stay.
    later = now + timedelta(days=200)
    assert consolidate(engine, later, tenant=tenant).runs[0].report["changes"]["forgotten"] == 1
    assert rows(engine, "memory_edges", tenant, "source_id") == []
    assert statuses(engine, tenant) == {a: "active", b: "active"}
    assert not any(consolidate(engine, later, tenant=tenant).runs[0].report["changes"].values())


def test_cli_consolidate_one_agent(engine, tenant) -> None:
    ours = record(engine, tenant, TEA[:2], agent_id="cli-a")
    theirs = record(engine, tenant, TEA[:2], agent_id="cli-b")
    sync(engine)
    env = {**os.environ, "COLUMNS": "200"}
    out = subprocess.run([sys.executable, "-m", "cli.main", "lifecycle", "consolidate", "--tenant", tenant,
                          "--agent-id", "cli-a", "--json"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=180)
    assert out.returncode == 0, out.stderr
    [run] = json.loads(out.stdout)["runs"]
    assert run["report"]["scopes"] == 1 and run["report"]["changes"]["merged"] == 1
    status = statuses(engine, tenant)
    assert sorted(status[m] for m in ours) == ["active", "merged"]
    assert [status[m] for m in theirs] == ["active", "active"]  # another agent: not consolidated
    table = subprocess.run([sys.executable, "-m", "cli.main", "lifecycle", "consolidate", "--tenant", tenant],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert table.returncode == 0, table.stderr
    assert "merged" in table.stdout and "ConsolidationCompleted" in table.stdout
