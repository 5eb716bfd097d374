"""`engramlog events export --format parquet`: the tenant's events, filtered as asked, in one Parquet file that
DuckDB reads with one SELECT (payloads as JSON text), the same events the JSON lines export gives."""

from __future__ import annotations

import json

import duckdb
from typer.testing import CliRunner

from cli.main import app
from services.remember import MemoryInput, remember

META = {"actor": "test", "correlation_id": "export"}


def test_a_parquet_export_reads_back_in_duckdb(engine, tenant, tmp_path):
    contents = ["Lisbon trams are yellow", "Porto has a bridge", "Faro has a marina"]
    remember(engine, tenant, [MemoryInput(c, must_keep=True) for c in contents], META)
    remember(engine, "other-" + tenant, [MemoryInput("another tenant's memory", must_keep=True)], META)
    out, lines = tmp_path / "events.parquet", tmp_path / "events.jsonl"
    runner = CliRunner()
    done = runner.invoke(app, ["events", "export", "--format", "parquet", "--output", str(out), "--tenant", tenant])
    assert done.exit_code == 0, done.output
    assert runner.invoke(app, ["events", "export", "--output", str(lines), "--tenant", tenant]).exit_code == 0
    expected = [json.loads(line) for line in lines.read_text().splitlines()]

    rows = duckdb.sql(f"SELECT position, tenant, type, data, recorded_at FROM '{out}' ORDER BY position").fetchall()
    assert [r[0] for r in rows] == [e["position"] for e in expected]
    assert {r[1] for r in rows} == {tenant}
    recorded = [json.loads(r[3])["content"] for r in rows if r[2] == "MemoryRecorded"]
    assert recorded == contents
    assert all(r[4].tzinfo is not None for r in rows)
    # a filter applies as for the other formats
    only = tmp_path / "recorded.parquet"
    assert runner.invoke(app, ["events", "export", "--format", "parquet", "--output", str(only), "--tenant", tenant,
                               "--type", "MemoryRecorded"]).exit_code == 0
    assert duckdb.sql(f"SELECT count(*) FROM '{only}'").fetchall() == [(3,)]


def test_parquet_needs_an_output_file():
    done = CliRunner().invoke(app, ["events", "export", "--format", "parquet"])
    assert done.exit_code != 0 and "--output" in done.output
