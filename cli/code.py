"""Code-intelligence commands (registered by cli/main.py), through the API:

    engramlog code index PATH [--repo NAME]   send a repository's source files whose content hash differs from the
                                              server's (and remove those gone from PATH), in batches, with a
                                              progress bar; the repository is named after the folder by default

Which files: `git ls-files` (tracked and untracked, .gitignore respected) when PATH is in a git work tree, else
a walk of PATH honouring its .gitignore files (pathspec); of those, the supported languages' source files. A
binary file (a NUL byte), one that is not UTF-8 or one over --max-bytes is skipped with its reason.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
import urllib.parse
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer

from cli import calls
from cli.output import console, fail, progress
from domain.code.languages import DEFAULT_MAX_CODE_FILE_BYTES, language_of, repo_problem

code_app = typer.Typer(help="Code intelligence: index a repository's source files.", no_args_is_help=True)
BATCH_FILES = 200
BATCH_BYTES = 16 * 1024 * 1024  # well under the API's body limit
SHOWN_SKIPS = 20


def _git_files(root: Path) -> list[str] | None:
    """Files under `root` that git would not ignore (relative POSIX paths), or None when root is no work tree."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, check=True, timeout=120).stdout
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return None
    files = sorted({p for p in out.decode("utf-8", "surrogateescape").split("\0") if p})
    return files or None  # none: PATH is ignored by the work tree it sits in (an installed package): walk it


def _walked_files(root: Path) -> list[str]:
    """Files under `root`, less those its .gitignore files (at any depth) ignore, and .git itself."""
    import pathspec

    rules: list[tuple[str, Any]] = []  # (folder relative to root, its .gitignore's spec)
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        rel = Path(folder).relative_to(root).as_posix()
        rel = "" if rel == "." else rel
        if ".gitignore" in files:
            lines = (Path(folder) / ".gitignore").read_text("utf-8", "replace").splitlines()
            rules.append((rel, pathspec.GitIgnoreSpec.from_lines(lines)))

        def ignored(path: str, is_dir: bool) -> bool:
            for base, spec in rules:
                if base and not path.startswith(base + "/"):
                    continue
                inner = path[len(base) + 1:] if base else path
                if spec.match_file(inner + ("/" if is_dir else "")):
                    return True
            return False

        dirs[:] = sorted(d for d in dirs if d != ".git" and not ignored(f"{rel}/{d}".lstrip("/"), True))
        found.extend(p for f in files if not ignored(p := f"{rel}/{f}".lstrip("/"), False))
    return sorted(found)


def _read(file: Path, max_bytes: int) -> tuple[str | None, str | None]:
    """(text, None) or (None, the reason it is skipped)."""
    try:
        if file.is_symlink() or not file.is_file():
            return None, "not a regular file"
        size = file.stat().st_size
        if size > max_bytes:
            return None, f"{size} bytes, over --max-bytes {max_bytes}"
        raw = file.read_bytes()
    except OSError as exc:
        return None, exc.strerror or "unreadable"
    if b"\0" in raw:
        return None, "binary (a NUL byte)"
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text (byte {exc.start})"


def _server_hashes(repo: str) -> dict[str, str]:
    return {f["path"]: f["content_hash"] for f in calls.paged(f"/v1/code/{urllib.parse.quote(repo)}/files", "files")}


@code_app.command("index")
def index(path: Annotated[Path, typer.Argument(help="the repository's folder", exists=True, file_okay=False)],
          repo: Annotated[str | None, typer.Option(help="the repository's name [default: the folder's]")] = None,
          max_bytes: Annotated[int, typer.Option(help="skip larger files")] = DEFAULT_MAX_CODE_FILE_BYTES,
          remove: Annotated[bool, typer.Option(help="remove files the server has that PATH no longer holds")]
          = True) -> None:
    """Send PATH's source files whose content hash differs from the server's, in batches."""
    root = path.resolve()
    name = repo or root.name
    problem = repo_problem(name)
    if problem:
        fail(f"repository {name!r}: {problem} (name it with --repo)")
    started = time.perf_counter()
    listed = _git_files(root)
    source = "git ls-files" if listed is not None else ".gitignore walk"
    listed = listed if listed is not None else _walked_files(root)
    candidates = [p for p in listed if language_of(p)]
    server = _server_hashes(name)
    changed: list[dict[str, Any]] = []
    skipped: list[tuple[str, str]] = []
    local: set[str] = set()
    for rel in candidates:
        content, why = _read(root / rel, max_bytes)
        if content is None:
            skipped.append((rel, why or "skipped"))
            continue
        local.add(rel)
        if server.get(rel) != hashlib.sha256(content.encode("utf-8")).hexdigest():
            changed.append({"path": rel, "content": content})
    gone = [{"path": p, "remove": True} for p in sorted(set(server) - local)] if remove else []
    console.print(f"{name}: {len(listed)} file(s) by {source}, {len(candidates)} source file(s), "
                  f"{len(changed)} changed, {len(gone)} to remove, {len(skipped)} skipped")
    for rel, why in skipped[:SHOWN_SKIPS]:
        console.print(f"  skipped {rel}: {why}")
    if len(skipped) > SHOWN_SKIPS:
        console.print(f"  ... and {len(skipped) - SHOWN_SKIPS} more skipped")
    actions: Counter[str] = Counter()
    with progress(console) as bar:
        task = bar.add_task("index", total=len(changed) + len(gone))
        for batch in calls.batches(changed + gone, BATCH_FILES, BATCH_BYTES):
            out = calls.call("POST", f"/v1/code/{urllib.parse.quote(name)}/files", json={"files": batch})
            actions.update(f["action"] for f in out["files"])
            bar.advance(task, len(batch))
    console.print(f"{actions['put']} file(s) put, {actions['removed']} removed, {actions['unchanged']} unchanged "
                  f"in {time.perf_counter() - started:.1f}s")


def register(app: typer.Typer) -> None:
    app.add_typer(code_app, name="code")
