"""`engramlog transcripts put` and `sync` (cli/transcripts.py) against the real app: sync sends only changed files,
and each put writes only its new chunks."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from tests.e2e.test_knowledge_cli import cli_on


def turns(n: int, start: int = 0) -> str:
    return "".join(f"[2026-03-01 08:00] {'USER' if i % 2 == 0 else 'ASSISTANT'}: line {i} of the otter{i} talk\n"
                   for i in range(start, start + n))


def test_put_and_sync(client, engine, monkeypatch, tmp_path: Path) -> None:
    from projections.runner import catch_up
    from projections.transcripts import TranscriptsProjector

    def project() -> None:  # sync compares with the read model (no worker runs here)
        catch_up(engine, TranscriptsProjector(), 500, max_seconds=120)

    app = cli_on(client, monkeypatch)
    run = CliRunner().invoke
    (tmp_path / "2026").mkdir()
    (tmp_path / "2026" / "a.txt").write_text(turns(30))
    (tmp_path / "b.jsonl").write_text('{"role": "user", "content": "hello otter"}\n')

    r = run(app, ["transcripts", "put", str(tmp_path / "b.jsonl")])
    assert r.exit_code == 0, r.output
    assert "b: version 1 (1 chunk(s) written, 0 reused; 1 turns)" in r.output
    project()

    r = run(app, ["transcripts", "sync", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "2 file(s), 1 changed" in r.output and "4 chunk(s) written, 0 reused" in r.output
    project()
    r = run(app, ["transcripts", "sync", str(tmp_path)])
    assert "2 file(s), 0 changed" in r.output

    (tmp_path / "2026" / "a.txt").write_text(turns(35))
    r = run(app, ["transcripts", "sync", str(tmp_path)])
    assert "2 file(s), 1 changed" in r.output and "2 chunk(s) written, 3 reused" in r.output
    assert client.get("/v1/transcripts/2026:a").content == turns(35).encode()

    project()
    (tmp_path / "bad.txt").write_text("no turn header here\n")
    (tmp_path / "c.txt").write_text(turns(3))
    r = run(app, ["transcripts", "sync", str(tmp_path)])
    # The refused file is reported with its reason (rich may wrap it); the others are still put.
    said = " ".join(r.output.split())
    assert r.exit_code == 2 and "bad.txt" in said and "line 1: expected a turn, `[timestamp] ROLE" in said, said
    assert "4 file(s), 2 changed" in said and "1 chunk(s) written" in said
    assert client.get("/v1/transcripts/c").content == turns(3).encode()
