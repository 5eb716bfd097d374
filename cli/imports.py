"""Import commands (registered by cli/main.py), through the API:

    engramlog import chat FILE [--format auto|chatgpt|claude|jsonl] [--agent-id A] [--project P] [--remember]
                               [--dry-run]

The export is parsed here first (domain/imports/: a bad file stops before anything is sent), then checked whole
by the server (POST /v1/import/chat?dry_run=true, batch by batch: a refusal stops before anything is written),
then imported in batches of whole conversations (at most ENGRAMLOG_MAX_BATCH messages or 4 MiB a batch, but
for one larger conversation), each sent as JSONL lines that name the conversation's source, so the sessions are
the ones a direct POST of the file would write. The tenant is the API key's (ENGRAMLOG_API_KEY).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from cli import calls
from cli.output import console, fail, progress

BATCH_BYTES = 4 * 1024 * 1024
_COUNTS = ("conversations", "empty", "sessions_new", "messages", "messages_appended", "messages_present",
           "transcripts_written", "transcripts_unchanged", "memories_recorded", "memories_present",
           "memories_skipped")


def _batches(lines: Sequence[tuple[int, str]], max_messages: int) -> Iterator[list[tuple[int, str]]]:
    """(messages, JSONL line) of whole conversations, cut at max_messages or BATCH_BYTES (one larger alone)."""
    batch: list[tuple[int, str]] = []
    messages = size = 0
    for n, line in lines:
        if batch and (messages + n > max_messages or size + len(line) > BATCH_BYTES):
            yield batch
            batch, messages, size = [], 0, 0
        batch.append((n, line))
        messages, size = messages + n, size + len(line)
    if batch:
        yield batch


def _send(batch: list[tuple[int, str]], params: dict[str, Any]) -> dict[str, Any]:
    body = "".join(line for _, line in batch).encode("utf-8")
    return calls.call("POST", "/v1/import/chat", stop=False, content=body, params=params,
                      headers={"content-type": "application/x-ndjson"})


def _pass(batches: list[list[tuple[int, str]]], params: dict[str, Any], label: str) -> dict[str, Any]:
    total: dict[str, Any] = dict.fromkeys(_COUNTS, 0) | {"last_position": None}
    with progress(console) as bar:
        task = bar.add_task(label, total=sum(n for b in batches for n, _ in b))
        for batch in batches:
            try:
                out = _send(batch, params)
            except calls.Refused as exc:
                bar.stop()
                fail(f"{exc}" if params.get("dry_run") else f"{exc} (the batches before it are imported; fix the "
                     "cause and run it again: what is imported already is not appended again)")
            for k in _COUNTS:
                total[k] += out[k]
            if out.get("last_position") is not None:
                total["last_position"] = max(total["last_position"] or 0, out["last_position"])
            bar.advance(task, sum(n for n, _ in batch))
    return total


def _summary(t: dict[str, Any], remember: bool, dry_run: bool) -> str:
    empty = f", {t['empty']} empty skipped" if t["empty"] else ""
    lines = [f"{t['conversations']} conversation(s) ({t['sessions_new']} new session(s){empty}), "
             f"{t['messages']} message(s): {t['messages_appended']} {'to append' if dry_run else 'appended'}, "
             f"{t['messages_present']} already there"]
    if not dry_run:
        lines.append(f"transcripts: {t['transcripts_written']} written, {t['transcripts_unchanged']} unchanged")
    if remember:
        over = f", {t['memories_skipped']} over the memory size limit (kept in the session only)" \
            if t["memories_skipped"] else ""
        lines.append(f"memories: {t['memories_recorded']} user message(s) {'to record' if dry_run else 'recorded'} "
                     f"through the governor, {t['memories_present']} already there{over}")
    if t.get("last_position") is not None:
        lines.append(f"last position {t['last_position']}")
    return "\n".join(lines)


def chat(file: Annotated[Path, typer.Argument(help="conversations.json or a .jsonl", exists=True, dir_okay=False)],
         fmt: Annotated[str, typer.Option("--format", help="auto, chatgpt, claude or jsonl")] = "auto",
         agent_id: Annotated[str | None, typer.Option("--agent-id", help="the sessions' agent")] = None,
         project: Annotated[str | None, typer.Option(help="the sessions' project")] = None,
         remember: Annotated[bool, typer.Option("--remember", help="each user message a memory too, through "
                                                "the governor")] = False,
         dry_run: Annotated[bool, typer.Option("--dry-run", help="check and count, write nothing")] = False) -> None:
    """Import a ChatGPT or Claude export (conversations.json) or OpenAI-style message JSONL: each conversation a
    session and a transcript (a re-import appends nothing)."""
    from domain.imports.chat_formats import CHAT_FORMATS, parse_chat
    from domain.imports.conversations import ChatFormatError

    if fmt not in CHAT_FORMATS:
        fail(f"--format must be one of {', '.join(CHAT_FORMATS)}")
    try:
        conversations = parse_chat(file.read_bytes(), fmt)
    except ChatFormatError as exc:
        fail(f"{file}: {exc}")
    # ASCII JSON: a lone surrogate the export holds reaches the server escaped, and is refused there with its reason
    lines = [(len(c.messages), json.dumps(c.as_json()) + "\n") for c in conversations]
    batches = list(_batches(lines, calls.settings().limits.max_batch))
    params: dict[str, Any] = {k: v for k, v in {"format": "jsonl", "agent_id": agent_id, "project": project,
                                                "remember": remember}.items() if v not in (None, False)}
    console.print(f"{file}: {len(conversations)} conversation(s), {sum(n for n, _ in lines)} message(s)")
    checked = _pass(batches, {**params, "dry_run": True}, "checking")
    done = checked if dry_run else _pass(batches, params, "importing")
    console.print(escape(_summary(done, remember, dry_run)), highlight=False)


def register(app: typer.Typer) -> None:
    """`import chat` in the `import` group (one group for every import: cli/import_log.py's `import log` too),
    created here when no module registered it before."""
    group = next((g.typer_instance for g in app.registered_groups if g.name == "import" and g.typer_instance),
                 None)
    if group is None:
        group = typer.Typer(help="Import into the store: chat exports, an exported event log.",
                            no_args_is_help=True)
        app.add_typer(group, name="import")
    group.command("chat")(chat)


__all__ = ["register"]
