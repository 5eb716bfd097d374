"""Chat imports end to end (issue 18 §3): POST /v1/import/chat and `engramlog import chat` on the real app and
PostgreSQL: each conversation a session (its messages with their times) and a transcript, a re-import appends
nothing (events counted), --remember records the user messages through the governor once, and a bad export is
refused with its reason and writes nothing, even when only its last conversation is bad."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import text
from typer.testing import CliRunner

from projections.runner import catch_up
from projections.sessions import SessionsProjector

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "chat"
KAYAK = "chatgpt:6774f1a0-0c1e-8005-9d3b-2f6c1a9e0b11"


def events(engine, tenant: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t"), {"t": tenant}).scalar_one()


def cli_on(client, monkeypatch):
    from engramlog_client import Engramlog

    import cli.calls
    import cli.main

    monkeypatch.setattr(cli.calls, "client", lambda: Engramlog(http_client=client))
    return cli.main.app


def test_http_import_sessions_transcripts_and_reimport(client, engine, tenant) -> None:
    body = (FIXTURES / "chatgpt_conversations.json").read_bytes()
    r = client.post("/v1/import/chat", content=body, params={"agent_id": "importer"})
    assert r.status_code == 200, r.text
    out = r.json()
    assert (out["conversations"], out["sessions_new"], out["messages"], out["messages_appended"],
            out["messages_present"], out["transcripts_written"]) == (2, 2, 8, 8, 0, 2), out
    assert out["session_ids"][0] == KAYAK and out["last_position"] > 0
    written = events(engine, tenant)
    assert written == 4  # one append and one transcript put a conversation

    catch_up(engine, SessionsProjector(), 500, max_seconds=120)
    page = client.get(f"/v1/sessions/{KAYAK}/messages").json()
    assert [(m["message_id"], m["role"]) for m in page["messages"]] == [
        ("u1", "user"), ("a1", "assistant"), ("u2", "user"), ("c3", "assistant"), ("x3", "tool"),
        ("a4", "assistant")]
    assert page["messages"][0]["created_at"].startswith("2025-01-01T10:00:00.5")
    assert page["messages"][5]["content"] == "The surface is about 55-60 F in June: wear a wetsuit."
    listed = {s["session_id"]: s for s in client.get("/v1/sessions").json()["sessions"]}
    assert listed[KAYAK]["agent_id"] == "importer" and listed[KAYAK]["first_at"].startswith("2025-01-01T10:00")
    transcript = client.get(f"/v1/transcripts/{KAYAK}")
    assert transcript.status_code == 200
    turns = [json.loads(line) for line in transcript.text.splitlines()]
    assert [t["role"] for t in turns][:2] == ["user", "assistant"] and "wetsuit" in turns[-1]["content"]

    again = client.post("/v1/import/chat", content=body).json()
    assert (again["messages_appended"], again["messages_present"], again["sessions_new"],
            again["transcripts_unchanged"], again["last_position"]) == (0, 8, 0, 2, None)
    assert events(engine, tenant) == written  # a re-import appends nothing

    # the same conversations as the CLI sends them (JSONL lines naming their source): the same sessions
    from domain.imports.chat_formats import parse_chat

    lines = "".join(json.dumps(c.as_json()) + "\n" for c in parse_chat(body))
    assert client.post("/v1/import/chat", content=lines.encode(), params={"format": "jsonl"}).json()[
        "messages_present"] == 8
    assert events(engine, tenant) == written


def test_bad_exports_write_nothing(client, engine, tenant) -> None:
    good = json.loads((FIXTURES / "claude_conversations.json").read_text())
    late_bad_time = [*good, {"uuid": "z", "chat_messages": [{"sender": "human", "text": "x", "created_at": "soon"}]}]
    too_long = [*good, {"uuid": "y", "chat_messages": [{"sender": "human", "text": "x" * 200_000}]}]
    cases = [(b"[{\"uuid\": ", {}, 422, "not JSON"),
             (b"caf\xe9", {}, 422, "UTF-8"),
             (json.dumps(late_bad_time).encode(), {}, 422, "is not a time"),
             (json.dumps(too_long).encode(), {}, 413, "limit is"),
             (json.dumps(good).encode(), {"format": "chatgpt"}, 422, "ChatGPT conversation has an `id`"),
             (json.dumps(good).encode(), {"format": "xml"}, 422, "format"),
             (b'[{"uuid": "u", "chat_messages": [{"sender": "human", "text": "\\ud800"}]}]', {}, 422, "surrogate")]
    for body, params, status, reason in cases:
        r = client.post("/v1/import/chat", content=body, params=params)
        assert r.status_code == status and reason in r.text, (params, r.status_code, r.text)
    assert events(engine, tenant) == 0
    dry = client.post("/v1/import/chat", content=json.dumps(good).encode(), params={"dry_run": True}).json()
    assert (dry["dry_run"], dry["messages_appended"], dry["empty"]) == (True, 4, 1) and events(engine, tenant) == 0


def said(result) -> str:
    return " ".join(result.output.split())  # rich wraps lines at the terminal's width


def test_cli_import_with_remember_twice(client, engine, tenant, monkeypatch) -> None:
    app = cli_on(client, monkeypatch)

    def run(app, args):
        result = CliRunner().invoke(app, args)
        return result, said(result)

    claude = str(FIXTURES / "claude_conversations.json")
    r, out = run(app, ["import", "chat", claude, "--agent-id", "gardener", "--remember"])
    assert r.exit_code == 0, r.output
    assert "1 conversation(s) (1 new session(s), 1 empty skipped), 4 message(s): 4 appended, 0 already there" \
        in out, out
    assert "memories: 2 user message(s) recorded through the governor, 0 already there" in out
    written = events(engine, tenant)
    with engine.connect() as conn:
        recorded = conn.execute(text("SELECT data->>'session_id', data->>'agent_id', occurred_at FROM events "
                                     "WHERE tenant = :t AND type = 'MemoryRecorded' ORDER BY position"),
                                {"t": tenant}).all()
    assert [(s, a) for s, a, _ in recorded] == [("claude:0b3c6c1e-2f4d-4d7e-9a51-3c2f8e7d6a10", "gardener")] * 2
    assert recorded[0][2].isoformat().startswith("2025-03-04T08:15:00.1")

    r, out = run(app, ["import", "chat", claude, "--agent-id", "gardener", "--remember"])
    assert r.exit_code == 0, r.output
    assert "4 message(s): 0 appended, 4 already there" in out
    assert "memories: 0 user message(s) recorded through the governor, 2 already there" in out
    assert events(engine, tenant) == written

    jsonl = str(FIXTURES / "openai_messages.jsonl")
    r, out = run(app, ["import", "chat", jsonl, "--dry-run"])
    assert r.exit_code == 0 and "7 message(s): 7 to append" in out and events(engine, tenant) == written
    r, out = run(app, ["import", "chat", jsonl, "--agent-id", "coach"])
    assert r.exit_code == 0 and "7 appended" in out, out
    r, out = run(app, ["import", "chat", claude, "--agent-id", "someone-else"])  # nothing new: nothing refused
    assert r.exit_code == 0 and "0 appended" in out


def test_cli_bad_file_writes_nothing(client, engine, tenant, monkeypatch, tmp_path) -> None:
    app = cli_on(client, monkeypatch)
    bad = tmp_path / "conversations.json"
    bad.write_text('[{"id": "c1", "mapping": {"n": {"message": {"author": {"role": "user"}, "create_time": '
                   '"yesterday", "content": {"parts": ["hi"]}}}}}]')
    r = CliRunner().invoke(app, ["import", "chat", str(bad)])
    assert r.exit_code == 2 and "is not a time" in said(r), r.output
    # a file the server refuses in its check pass (a message over the session limit): nothing written either
    big = tmp_path / "big.jsonl"
    big.write_text(json.dumps({"id": "ok", "messages": [{"role": "user", "content": "fine"}]}) + "\n"
                   + json.dumps({"id": "big", "messages": [{"role": "user", "content": "x" * 200_000}]}) + "\n")
    r = CliRunner().invoke(app, ["import", "chat", str(big)])
    assert r.exit_code == 2 and "limit" in said(r), r.output
    lone = tmp_path / "lone.jsonl"  # a lone surrogate, escaped in the JSON: refused by the server with its reason
    lone.write_text('{"id": "s", "messages": [{"role": "user", "content": "half \\ud800 a pair"}]}\n')
    r = CliRunner().invoke(app, ["import", "chat", str(lone)])
    assert r.exit_code == 2 and "lone surrogate" in said(r), r.output
    assert events(engine, tenant) == 0


def test_sdk_import_chat(client, engine, tenant) -> None:
    from engramlog_client import Engramlog, EngramlogError

    sdk = Engramlog(http_client=client)
    jsonl = (FIXTURES / "openai_messages.jsonl").read_text()
    out = sdk.import_chat(jsonl, agent_id="coach")
    assert (out.conversations, out.messages_appended, out.session_ids) == (2, 7, ["jsonl:ft-001", "jsonl:thread-42"])
    assert sdk.import_chat(jsonl.encode()).messages_present == 7
    try:
        sdk.import_chat("not json", format="chatgpt")
        raise AssertionError("a bad export is refused")
    except EngramlogError as exc:
        assert exc.status == 422 and "not JSON" in str(exc)
    assert events(engine, tenant) == 4
