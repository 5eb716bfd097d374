"""The CLI's one way of telling a failed API call (cli/calls.py): every command that calls the API, when nothing
answers, says where it looked for the API and exits 2; a reason holding brackets is printed as it is."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens there


@pytest.fixture
def nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The CLI's client aimed at a port nothing listens on, without retries (a data dir with no stack in it)."""
    from engramlog_client import NO_RETRY, Engramlog

    import cli.calls

    url = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("ENGRAMLOG_DATA_DIR", str(tmp_path / "no-stack"))
    monkeypatch.setattr(cli.calls, "client", lambda: Engramlog(url, retry=NO_RETRY))
    monkeypatch.setattr(cli.calls, "settings", lambda: type("S", (), {"api_url": lambda self: url})())
    return url


@pytest.mark.parametrize("args", [
    ["remember", "x", "--no-wait"], ["recall", "q"], ["knowledge", "sync", "{dir}"], ["sessions", "list"],
    ["sessions", "resume", "s1"], ["transcripts", "sync", "{dir}"], ["code", "index", "{dir}", "--repo", "r"],
])
def test_every_api_command_says_where_it_found_no_api(nowhere: str, tmp_path: Path, args: list[str]) -> None:
    from cli.main import app

    (tmp_path / "a.md").write_text("# A\n")
    r = CliRunner().invoke(app, [a.replace("{dir}", str(tmp_path)) for a in args])
    said = " ".join(r.output.split())  # rich may wrap the line
    assert r.exit_code == 2, r.output
    assert f"error: cannot reach the API at {nowhere}: " in said, said


def test_a_refusal_is_printed_as_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    from cli.output import fail

    with pytest.raises(typer.Exit) as stopped:
        fail("line 1: expected a turn, `[timestamp] ROLE: text`")
    assert stopped.value.exit_code == 2
    assert "line 1: expected a turn, `[timestamp] ROLE: text`" in " ".join(capsys.readouterr().err.split())
