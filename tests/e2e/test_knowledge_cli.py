"""`engramlog knowledge put` and `sync` (cli/knowledge.py) against the real app: sync sends only changed files."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner


def cli_on(client, monkeypatch):
    """The CLI's API client speaking to the test app (as this test's tenant)."""
    from engramlog_client import Engramlog

    import cli.calls
    import cli.main

    def make():
        return Engramlog(http_client=client)  # the SDK through the test app (not closed by the SDK: not its own)

    monkeypatch.setattr(cli.calls, "client", make)
    return cli.main.app


def test_put_and_sync_only_changed(client, engine, monkeypatch, tmp_path: Path) -> None:
    from projections.knowledge import KnowledgeProjector
    from projections.runner import catch_up

    def project() -> None:  # sync compares with the read model (no worker runs here); the server's no-op covers lag
        catch_up(engine, KnowledgeProjector(), 500, max_seconds=120)

    app = cli_on(client, monkeypatch)
    run = CliRunner().invoke
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "deploys.md").write_text("## Rollback\nundo\n")
    (tmp_path / "notes.txt").write_text("plain notes")
    (tmp_path / "image.png").write_bytes(b"\x89PNG")

    r = run(app, ["knowledge", "put", str(tmp_path / "ops" / "deploys.md"), "--root", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "ops/deploys.md: version 1 (changed" in r.output
    project()

    r = run(app, ["knowledge", "sync", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "2 file(s), 1 changed" in r.output and "1 document(s) written" in r.output
    project()
    r = run(app, ["knowledge", "sync", str(tmp_path)])
    assert "2 file(s), 0 changed" in r.output
    project()

    (tmp_path / "notes.txt").write_text("plain notes, edited")
    r = run(app, ["knowledge", "sync", str(tmp_path)])
    assert "2 file(s), 1 changed" in r.output
    assert client.get("/v1/knowledge/notes.txt").json()["content"] == "plain notes, edited"

    (tmp_path / "bad.md").write_bytes(b"caf\xe9")
    r = run(app, ["knowledge", "sync", str(tmp_path)])
    assert r.exit_code == 2 and "UTF-8 text" in r.output  # (rich wraps the line)
