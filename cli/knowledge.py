"""Knowledge-library commands (registered by cli/main.py), through the API:

    engramlog knowledge put PATH... [--root DIR] [--project P] [--tag T]   each file at its path under --root
    engramlog knowledge sync DIR [--project P] [--glob G]                  only files whose content hash differs
                                                                           from the server's current version
"""

from __future__ import annotations

import hashlib
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

console = Console()
err = Console(stderr=True)
knowledge_app = typer.Typer(help="The knowledge library: put documents, sync a folder.", no_args_is_help=True)

ProjectOpt = Annotated[str | None, typer.Option(help="The documents' project")]
TagOpt = Annotated[list[str] | None, typer.Option("--tag", help="repeatable")]
DEFAULT_GLOBS = ("**/*.md", "**/*.markdown", "**/*.txt")
BATCH_FILES = 100
BATCH_BYTES = 16 * 1024 * 1024  # well under the API's 64 MiB body limit


def _fail(message: str) -> None:
    err.print(f"[red]error:[/red] {message}")
    raise typer.Exit(2)


def _client():  # type: ignore[no-untyped-def]
    from cli.main import _client as client

    return client()


def _read(file: Path) -> str:
    try:
        return file.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        _fail(f"{file}: not UTF-8 text (byte {exc.start})")
    except OSError as exc:
        _fail(f"{file}: {exc.strerror}")
    raise AssertionError  # unreachable: _fail exits


def _doc_path(file: Path, root: Path) -> str:
    try:
        return file.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        _fail(f"{file} is not under {root} (--root)")
    raise AssertionError


def _call(method: str, url: str, **kwargs: Any) -> Any:
    from engramlog_client import EngramlogError

    try:
        with _client() as c:
            return c.request(method, url, **kwargs)
    except EngramlogError as exc:
        _fail(str(exc))
    except Exception as exc:  # the API is not reachable
        _fail(f"cannot reach the API: {exc}")


@knowledge_app.command("put")
def put(paths: Annotated[list[Path], typer.Argument(help="files to put")],
        root: Annotated[Path, typer.Option(help="document paths are relative to this")] = Path("."),
        project: ProjectOpt = None, tag: TagOpt = None) -> None:
    """Put each file as a document at its path relative to --root (unchanged content: nothing appended)."""
    for file in paths:
        doc = _doc_path(file, root)
        out = _call("PUT", f"/v1/knowledge/{urllib.parse.quote(doc)}", json={"content": _read(file), "tags": tag or [],
                                                         "project": project})
        state = "changed" if out["changed"] else "unchanged"
        console.print(f"{doc}: version {out['version']} ({state}, {out['sections_changed']} of "
                      f"{out['sections']} sections new)")


def _server_hashes(project: str | None) -> dict[str, str]:
    """Content hash of each active document of the project on the server."""
    hashes: dict[str, str] = {}
    after: str | None = ""
    while after is not None:
        page = _call("GET", "/v1/knowledge", params={k: v for k, v in (("project", project), ("after", after),
                                                                      ("limit", 10_000)) if v is not None})
        hashes.update({d["path"]: d["content_hash"] for d in page["documents"] if d["status"] == "active"})
        after = page["next_after"]
    return hashes


def _batches(items: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    size = 0
    for item in items:
        n = len(item["content"].encode("utf-8"))
        if batch and (len(batch) >= BATCH_FILES or size + n > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += n
    if batch:
        yield batch


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
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    written = 0
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("sync", total=len(changed))
        for batch in _batches(changed):
            out = _call("POST", "/v1/knowledge/batch", json={"documents": batch})
            written += sum(1 for d in out["documents"] if d["changed"])
            progress.advance(task, len(batch))
    console.print(f"{written} document(s) written")


def register(app: typer.Typer) -> None:
    app.add_typer(knowledge_app, name="knowledge")
