"""The Darwinian decay sweep on real PostgreSQL with pinned clocks: transitions appended as MemoryStatusChanged
by the scheduler actor with their inputs, a second sweep with the same clock appends nothing, reactivation
after a new reference, the staging TTL, and `projections rebuild` + `verify` reproducing the statuses exactly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from lifecycle_support import events_of, record, rows, served, statuses, sync, verify_tenant
from sqlalchemy import text

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database

ROOT = Path(__file__).resolve().parents[2]


def db_now(engine) -> datetime:
    with engine.connect() as conn:
        return conn.execute(text("SELECT now()")).scalar_one()


def test_decay_transitions_are_events_and_replay_identically(engine, tenant) -> None:
    from projections.rebuild import rebuild, verify
    from projections.registry import PROJECTORS
    from workers.lifecycle import decay_sweep

    old, used, idle = record(engine, tenant, ["decay: never used", "decay: used now and then", "decay: idle"])
    [staged] = record(engine, tenant, ["decay: a staging memory"], disposition="staging")
    served(engine, tenant, [used])
    sync(engine)
    assert statuses(engine, tenant) == {old: "active", used: "active", idle: "active", staged: "staging"}
    t0 = db_now(engine)

    # 20 days on: only the staging TTL (14 days) has run out.
    report = decay_sweep(engine, t0 + timedelta(days=20), tenant)
    assert [(m, t.to_status) for _, m, t in report.transitions] == [(staged, "discarded")]
    # 40 days on: everything unreferenced for 30 days goes dormant.
    clock = t0 + timedelta(days=40)
    report = decay_sweep(engine, clock, tenant)
    assert sorted(str(m) for _, m, _ in report.transitions) == sorted(str(m) for m in (old, used, idle))
    assert statuses(engine, tenant) == {old: "dormant", used: "dormant", idle: "dormant", staged: "discarded"}
    changed = events_of(engine, tenant, ["MemoryStatusChanged"])
    assert len(changed) == 4
    for e in changed:
        assert e.metadata["actor"] == "system:scheduler" and e.stream_id == f"memory-{e.data['memory_id']}"
        assert {"ref_count", "last_referenced_at", "idle_days"} <= set(e.data["inputs"])
        assert e.data["reason"]
    dormant_used = next(e for e in changed if e.data["memory_id"] == str(used))
    assert datetime.fromisoformat(dormant_used.data["clock"].replace("Z", "+00:00")) == clock
    assert dormant_used.data["inputs"]["ref_count"] == 1 and dormant_used.data["inputs"]["idle_days"] >= 40 - 1e-3

    # The same clock again: nothing to do, nothing appended.
    assert decay_sweep(engine, clock, tenant).transitions == []
    assert len(events_of(engine, tenant, ["MemoryStatusChanged"])) == 4

    # `used` is recalled again (a dormant memory is still recallable): the next sweep reactivates it.
    served(engine, tenant, [used])
    clock2 = t0 + timedelta(days=41)
    report = decay_sweep(engine, clock2, tenant)
    assert [(m, t.from_status, t.to_status) for _, m, t in report.transitions] == [(used, "dormant", "active")]
    assert decay_sweep(engine, clock2, tenant).transitions == []  # the reactivation is a reference
    # 95 days after the last reference the unused ones are archived; `used` only goes dormant (idle since 41).
    clock3 = t0 + timedelta(days=96)
    report = decay_sweep(engine, clock3, tenant)
    assert {m: t.to_status for _, m, t in report.transitions} == {old: "archived", idle: "archived", used: "dormant"}
    assert decay_sweep(engine, clock3, tenant).transitions == []
    final = statuses(engine, tenant)
    assert final == {old: "archived", idle: "archived", used: "dormant", staged: "discarded"}

    # The log is the truth: rebuild the read models from it and get the same statuses, row for row.
    memories_before = rows(engine, "memories", tenant, "memory_id")
    activity_before = rows(engine, "memory_activity", tenant, "memory_id")
    assert verify_tenant(engine, "memories", tenant) == {"memories": 0, "memory_history": 0, "memory_versions": 0}
    assert verify(engine, PROJECTORS["activity"], batch_size=5).identical
    for name in ("memories", "activity"):
        rebuild(engine, PROJECTORS[name], batch_size=5)
    assert rows(engine, "memories", tenant, "memory_id") == memories_before
    assert rows(engine, "memory_activity", tenant, "memory_id") == activity_before
    assert statuses(engine, tenant) == final


def test_sweep_leaves_other_tenants_alone(engine, tenant) -> None:
    from workers.lifecycle import decay_sweep

    [mine] = record(engine, tenant, ["decay isolation: mine"])
    [theirs] = record(engine, tenant + "-other", ["decay isolation: theirs"])
    sync(engine)
    report = decay_sweep(engine, db_now(engine) + timedelta(days=31), tenant)
    assert [(t, m) for t, m, _ in report.transitions] == [(tenant, mine)]
    assert statuses(engine, tenant + "-other") == {theirs: "active"}


def test_cli_decay_with_a_pinned_clock(engine, tenant) -> None:
    [memory] = record(engine, tenant, ["decay cli: a memory nobody reads"])
    sync(engine)
    clock = (db_now(engine) + timedelta(days=35)).astimezone(UTC).isoformat()
    env = {**os.environ, "COLUMNS": "200"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cli.main", "lifecycle", "decay", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)

    out = run("--tenant", tenant, "--clock", clock)
    assert out.returncode == 0, out.stderr
    assert "active" in out.stdout and "dormant" in out.stdout and "1 transition" in out.stdout
    for unit in ("sections (knowledge)", "messages (sessions)", "chunks (transcripts)", "symbols (code)"):
        assert f"{unit}: " in out.stdout  # each decaying domain's part of the sweep
    out = run("--tenant", tenant, "--clock", clock, "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["transitions"] == 0
    assert statuses(engine, tenant) == {memory: "dormant"}
    bad = run("--clock", "yesterday-ish")
    assert bad.returncode == 2 and "ISO 8601" in bad.stderr


def test_a_scheduled_sweep_skips_while_another_runs(engine, tenant) -> None:
    import pytest

    from workers.lifecycle import JobBusy, decay_sweep, job_lock

    record(engine, tenant, ["decay busy: a memory"])
    sync(engine)
    clock = db_now(engine) + timedelta(days=31)
    with job_lock(engine, "decay"), pytest.raises(JobBusy):
        decay_sweep(engine, clock, tenant, wait=False)
    assert events_of(engine, tenant, ["MemoryStatusChanged"]) == []
    assert len(decay_sweep(engine, clock, tenant, wait=False).transitions) == 1
