"""`engramlog export` (the same command as `engramlog events export`): --tenant, --type (repeatable), --since and
--until (recorded time, until exclusive) select the events, in log order, in jsonl and parquet alike."""

from __future__ import annotations

import json
from datetime import datetime

import duckdb
from sqlalchemy import text
from typer.testing import CliRunner

from cli.main import app
from services.remember import MemoryInput, remember

META = {"actor": "test", "correlation_id": "export-flags"}


def _recorded(engine, tenant: str) -> list[tuple[str, datetime]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(
            "SELECT event_id::text, recorded_at FROM events WHERE tenant = :t AND type = 'MemoryRecorded'"
            " ORDER BY position"), {"t": tenant})]


def test_the_export_flags_select_the_events(engine, tenant, tmp_path):
    for content in ("Lisbon trams are yellow", "Porto has a bridge", "Faro has a marina"):
        remember(engine, tenant, [MemoryInput(content, must_keep=True)], META)  # one transaction each
    remember(engine, "other-" + tenant, [MemoryInput("another tenant's memory", must_keep=True)], META)
    recorded = _recorded(engine, tenant)
    since, until = recorded[1][1].isoformat(), recorded[2][1].isoformat()
    runner = CliRunner()
    out, table = tmp_path / "some.jsonl", tmp_path / "some.parquet"
    for fmt, path in (("jsonl", out), ("parquet", table)):
        done = runner.invoke(app, ["export", "--format", fmt, "--output", str(path), "--tenant", tenant,
                                   "--type", "MemoryRecorded", "--type", "MemoryAdmitted",
                                   "--since", since, "--until", until])
        assert done.exit_code == 0, done.output
        assert "exported 2 events" in done.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [e["type"] for e in lines] == ["MemoryRecorded", "MemoryAdmitted"]
    assert lines[0]["event_id"] == recorded[1][0] and {e["tenant"] for e in lines} == {tenant}
    assert lines[0]["data"]["content"] == "Porto has a bridge"  # an operator's export: content opened
    rows = duckdb.sql(f"SELECT event_id, type FROM '{table}' ORDER BY position").fetchall()
    assert rows == [(e["event_id"], e["type"]) for e in lines]
    # without filters: the tenant's whole log, the other tenant's never
    whole = tmp_path / "all.jsonl"
    assert runner.invoke(app, ["export", "--output", str(whole), "--tenant", tenant]).exit_code == 0
    everything = [json.loads(line) for line in whole.read_text().splitlines()]
    assert {e["tenant"] for e in everything} == {tenant}
    assert [e["event_id"] for e in everything if e["type"] == "MemoryRecorded"] == [r[0] for r in recorded]


def test_a_bad_time_is_refused():
    done = CliRunner().invoke(app, ["export", "--since", "yesterday-ish", "--tenant", "t"])
    assert done.exit_code != 0
