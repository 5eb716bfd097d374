"""Transcript commands (registered by cli/main.py), through the API:

    engramlog transcripts put FILE [--id ID] [--format jsonl|text]   one transcript (id: the file's name)
    engramlog transcripts sync DIR [--glob G]                        every transcript file under DIR whose content
                                                                     hash differs from the server's; each put
                                                                     writes only its new chunks
A file's transcript id is its path under DIR without its suffix, "/" read as ":" (`2026/s1.jsonl` → `2026:s1`).
"""

from __future__ import annotations

import hashlib
import re
import urllib.parse
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from cli import calls
from cli.output import console, err, fail, progress

transcripts_app = typer.Typer(help="Transcripts: put verbatim session exports, sync a folder.", no_args_is_help=True)

DEFAULT_GLOBS = ("**/*.jsonl", "**/*.txt", "**/*.log")
FormatOpt = Annotated[str | None, typer.Option("--format", help="jsonl or text (default: detected)")]


def transcript_id_of(file: Path, root: Path) -> str:
    rel = file.resolve().relative_to(root.resolve()).with_suffix("").as_posix()
    return re.sub(r"[^A-Za-z0-9._:@+-]", "-", rel.replace("/", ":")).lstrip("._:@+-") or "transcript"


def _put(transcript_id: str, body: bytes, fmt: str | None) -> dict[str, Any]:
    params = {"format": fmt} if fmt else {}
    return calls.call("PUT", f"/v1/transcripts/{urllib.parse.quote(transcript_id, safe='')}", stop=False,
                      content=body, params=params, headers={"content-type": "text/plain; charset=utf-8"})


def _summary(out: dict[str, Any]) -> str:
    if not out["changed"]:
        return f"{out['transcript_id']}: version {out['version']} unchanged (nothing written)"
    return (f"{out['transcript_id']}: version {out['version']} ({out['chunks_written']} chunk(s) written, "
            f"{out['chunks_reused']} reused; {out['turns']} turns)")


@transcripts_app.command("put")
def put(file: Annotated[Path, typer.Argument(help="the transcript file", exists=True, dir_okay=False)],
        transcript_id: Annotated[str | None, typer.Option("--id", help="default: the file's name")] = None,
        fmt: FormatOpt = None) -> None:
    """Put one transcript (only its chunks new to the server are written)."""
    try:
        console.print(escape(_summary(_put(transcript_id or transcript_id_of(file, file.parent), file.read_bytes(),
                                           fmt))))
    except calls.Refused as exc:
        fail(f"{file}: {exc}")


def _server_hashes() -> dict[str, str]:
    return {t["transcript_id"]: t["content_hash"] for t in calls.paged("/v1/transcripts", "transcripts")}


@transcripts_app.command("sync")
def sync(directory: Annotated[Path, typer.Argument(help="folder of transcripts", exists=True, file_okay=False)],
         glob: Annotated[list[str] | None, typer.Option(help=f"repeatable; default {', '.join(DEFAULT_GLOBS)}")]
         = None, fmt: FormatOpt = None) -> None:
    """Put every transcript file under DIR whose content differs from the server's current version of it (a file
    the server refuses is reported with its reason and the others are still put; the exit code is then 2)."""
    files = sorted({f for g in (glob or DEFAULT_GLOBS) for f in directory.glob(g) if f.is_file()})
    ids = {f: transcript_id_of(f, directory) for f in files}
    twice = sorted({i for i in ids.values() if list(ids.values()).count(i) > 1})
    if twice:
        fail(f"two files name the same transcript id: {', '.join(twice)}")
    server = _server_hashes()
    changed = [f for f in files if server.get(ids[f]) != hashlib.sha256(f.read_bytes()).hexdigest()]
    console.print(f"{len(files)} file(s), {len(changed)} changed")
    written = reused = 0
    refused: list[str] = []
    with progress(console) as bar:
        task = bar.add_task("sync", total=len(changed))
        for f in changed:
            try:
                out = _put(ids[f], f.read_bytes(), fmt)
                written, reused = written + out["chunks_written"], reused + out["chunks_reused"]
            except calls.Refused as exc:
                refused.append(f"{f}: {exc}")
            bar.advance(task)
    console.print(f"{written} chunk(s) written, {reused} reused")
    for reason in refused:
        err.print(f"[red]refused:[/red] {escape(reason)}")
    if refused:
        raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    app.add_typer(transcripts_app, name="transcripts")
