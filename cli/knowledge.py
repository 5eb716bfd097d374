"""Knowledge-library commands (registered by cli/main.py), through the API:

    engramlog knowledge put PATH... [--root DIR] [--project P] [--tag T]   each file at its path under --root
    engramlog knowledge sync DIR [--project P] [--glob G]                  only files whose content hash differs
                                                                           from the server's current version
"""

from __future__ import annotations

import hashlib
import urllib.parse
from pathlib import Path
from typing import Annotated

import typer

from cli import calls
from cli.output import console, fail, progress

knowledge_app = typer.Typer(help="The knowledge library: put documents, sync a folder.", no_args_is_help=True)

ProjectOpt = Annotated[str | None, typer.Option(help="The documents' project")]
TagOpt = Annotated[list[str] | None, typer.Option("--tag", help="repeatable")]
DEFAULT_GLOBS = ("**/*.md", "**/*.markdown", "**/*.txt")
BATCH_FILES = 100
BATCH_BYTES = 16 * 1024 * 1024  # well under the API's 64 MiB body limit


def _read(file: Path) -> str:
    try:
        return file.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        fail(f"{file}: not UTF-8 text (byte {exc.start})")
    except OSError as exc:
        fail(f"{file}: {exc.strerror}")


def _doc_path(file: Path, root: Path) -> str:
    try:
        return file.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        fail(f"{file} is not under {root} (--root)")


@knowledge_app.command("put")
def put(paths: Annotated[list[Path], typer.Argument(help="files to put")],
        root: Annotated[Path, typer.Option(help="document paths are relative to this")] = Path("."),
        project: ProjectOpt = None, tag: TagOpt = None) -> None:
    """Put each file as a document at its path relative to --root (unchanged content: nothing appended)."""
    for file in paths:
        doc = _doc_path(file, root)
        out = calls.call("PUT", f"/v1/knowledge/{urllib.parse.quote(doc)}",
                         json={"content": _read(file), "tags": tag or [], "project": project})
        state = "changed" if out["changed"] else "unchanged"
        console.print(f"{doc}: version {out['version']} ({state}, {out['sections_changed']} of "
                      f"{out['sections']} sections new)")


def _server_hashes(project: str | None) -> dict[str, str]:
    """Content hash of each active document of the project on the server."""
    return {d["path"]: d["content_hash"] for d in calls.paged("/v1/knowledge", "documents", project=project)
            if d["status"] == "active"}


@knowledge_app.command("sync")
def sync(directory: Annotated[Path, typer.Argument(help="folder to import", exists=True, file_okay=False)],
         project: ProjectOpt = None, tag: TagOpt = None,
         glob: Annotated[list[str] | None, typer.Option(help=f"repeatable; default {', '.join(DEFAULT_GLOBS)}")]
         = None) -> None:
    """Put every matching file under DIR whose content differs from the server's current version of it."""
    files = sorted({f for g in (glob or DEFAULT_GLOBS) for f in directory.glob(g) if f.is_file()})
    server = _server_hashes(project)
    changed = []
    for file in files:
        content = _read(file)
        doc = _doc_path(file, directory)
        if server.get(doc) != hashlib.sha256(content.encode("utf-8")).hexdigest():
            changed.append({"path": doc, "content": content, "tags": tag or [], "project": project})
    console.print(f"{len(files)} file(s), {len(changed)} changed")
    written = 0
    with progress(console) as bar:
        task = bar.add_task("sync", total=len(changed))
        for batch in calls.batches(changed, BATCH_FILES, BATCH_BYTES):
            out = calls.call("POST", "/v1/knowledge/batch", json={"documents": batch})
            written += sum(1 for d in out["documents"] if d["changed"])
            bar.advance(task, len(batch))
    console.print(f"{written} document(s) written")


def register(app: typer.Typer) -> None:
    app.add_typer(knowledge_app, name="knowledge")
