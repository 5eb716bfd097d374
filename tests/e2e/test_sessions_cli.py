"""`engramlog sessions list | show | append | resume` (cli/sessions.py) against the real app."""

from __future__ import annotations

from typer.testing import CliRunner

from tests.e2e.test_knowledge_cli import cli_on


def test_append_list_show_resume(client, engine, monkeypatch) -> None:
    from projections.runner import catch_up
    from projections.sessions import SessionsProjector

    app = cli_on(client, monkeypatch)
    run = CliRunner().invoke
    for role, content in (("user", "deploy the ledger"), ("assistant", "ledger deployed")):
        r = run(app, ["sessions", "append", "cli-1", "--role", role, content, "--agent-id", "ag"])
        assert r.exit_code == 0, r.output
    r = run(app, ["sessions", "append", "cli-1", "--role", "developer", "x"])
    assert r.exit_code == 2 and "role" in r.output
    catch_up(engine, SessionsProjector(), 500, max_seconds=120)
    r = run(app, ["sessions", "list"])
    assert r.exit_code == 0 and "cli-1" in r.output, r.output
    r = run(app, ["sessions", "show", "cli-1"])
    assert "#1 user" in r.output and "ledger deployed" in r.output, r.output
    r = run(app, ["sessions", "resume", "cli-1"])
    assert r.exit_code == 0, r.output
    assert r.output == client.get("/v1/sessions/cli-1/resume", params={"format": "text"}).text
    assert "## Last 30 turns" in r.output and "deploy the ledger" in r.output
