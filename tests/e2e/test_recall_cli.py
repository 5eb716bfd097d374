"""`engramlog recall` with --since / --until (valid time) and --as-of (recorded time) against the real app:
the options reach the server as the API's fields, and a value that is no date or timestamp is refused with the
reason before any call."""

from __future__ import annotations

import json

from funnel_support import project
from typer.testing import CliRunner


def cli_on(client, monkeypatch):
    """The CLI's API client speaking to the test app (as this test's tenant)."""
    from engramlog_client import Engramlog

    import cli.calls
    import cli.main

    monkeypatch.setattr(cli.calls, "client", lambda: Engramlog(http_client=client))
    return cli.main.app


def _answer(output: str) -> dict:
    """The --json answer. The app runs in this process, so its own log lines (structlog, to stdout once an earlier
    test configured it) may come before the CLI's JSON in the captured output."""
    start = 0 if output.startswith("{") else output.index("\n{") + 1
    answer, _ = json.JSONDecoder().raw_decode(output[start:])
    return answer


def _contents(output: str) -> list[str]:
    """The --json answer's contents."""
    return [r["content"] for r in _answer(output)["results"]]


def test_recall_filters_by_valid_and_recorded_time(client, engine, monkeypatch) -> None:
    may = client.post("/v1/memories", json={"content": "Ines moved the kiln to the north shed",
                                            "occurred_at": "2025-05-31T18:00:00Z", "must_keep": True})
    june = client.post("/v1/memories", json={"content": "Ines moved the kiln back to the studio",
                                             "occurred_at": "2025-06-01T09:00:00Z", "must_keep": True})
    assert may.status_code == 201 and june.status_code == 201, (may.text, june.text)
    project(engine, june.json()["position"])
    app, run = cli_on(client, monkeypatch), CliRunner().invoke

    r = run(app, ["recall", "where did Ines move the kiln", "--json"])
    assert r.exit_code == 0, r.output
    assert len(_contents(r.output)) == 2
    r = run(app, ["recall", "where did Ines move the kiln", "--until", "2025-05-31", "--json"])
    assert r.exit_code == 0 and _contents(r.output) == ["Ines moved the kiln to the north shed"], r.output
    r = run(app, ["recall", "where did Ines move the kiln", "--since", "2025-06-01T00:00:00Z", "--json"])
    assert r.exit_code == 0 and _contents(r.output) == ["Ines moved the kiln back to the studio"], r.output
    r = run(app, ["recall", "where did Ines move the kiln", "--as-of", str(may.json()["position"]), "--json"])
    assert r.exit_code == 0 and _contents(r.output) == ["Ines moved the kiln to the north shed"], r.output

    r = run(app, ["recall", "kiln", "--since", "banana"])
    assert r.exit_code == 2 and "--since 'banana' is not a date" in r.output, r.output
    r = run(app, ["recall", "kiln", "--as-of", "2025-05-31"])
    assert r.exit_code == 2 and "not a date alone" in r.output, r.output


def test_an_update_its_history_and_a_supersede_from_the_cli(client, engine, monkeypatch) -> None:
    old = client.post("/v1/memories", json={"content": "The free trial lasts 14 days", "agent_id": "cli-history"})
    assert old.status_code == 201, old.text
    project(engine, old.json()["position"])
    new = client.post("/v1/memories", json={"content": "Marketing extended the free trial to 30 days",
                                            "agent_id": "cli-history"})
    assert new.status_code == 201 and new.json()["supersedes"] == old.json()["memory_id"], new.text
    project(engine, new.json()["position"])
    app, run = cli_on(client, monkeypatch), CliRunner().invoke
    ask = ["recall", "how long is the free trial", "--agent-id", "cli-history"]

    r = run(app, [*ask, "--json"])
    assert r.exit_code == 0 and _contents(r.output) == ["Marketing extended the free trial to 30 days"], r.output
    r = run(app, [*ask, "--include-history", "--json"])
    assert r.exit_code == 0, r.output
    statuses = {x["content"]: x["explanation"]["status"] for x in _answer(r.output)["results"]}
    assert statuses == {"Marketing extended the free trial to 30 days": "active",
                        "The free trial lasts 14 days": "superseded"}, r.output
    r = run(app, [*ask, "--include-history"])
    assert r.exit_code == 0 and "superseded" in r.output, r.output

    r = run(app, ["history", old.json()["memory_id"], "--json"])
    assert r.exit_code == 0, r.output
    chain = _answer(r.output)
    assert chain["current"] == new.json()["memory_id"]
    [step] = chain["transitions"]
    assert step["trigger"] == "value_update" and "14 → 30" in step["reason"], step
    r = run(app, ["history", old.json()["memory_id"]])
    assert r.exit_code == 0 and "value_update" in r.output, r.output

    r = run(app, ["supersede", new.json()["memory_id"], "The free trial lasts 21 days", "--reason", "wrong",
                  "--json"])
    assert r.exit_code == 0, r.output
    fixed = _answer(r.output)
    assert fixed["supersedes"] == new.json()["memory_id"]
    project(engine, fixed["position"])
    r = run(app, [*ask, "--json"])
    assert r.exit_code == 0 and _contents(r.output) == ["The free trial lasts 21 days"], r.output
    r = run(app, ["supersede", new.json()["memory_id"], "again", "--reason", "twice"])
    assert r.exit_code == 2 and "409" in r.output, r.output  # already superseded: supersede its successor
