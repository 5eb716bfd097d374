"""Put and remove a repository's source files: each a CodeFilePut / CodeFileRemoved on the file's own stream,
appended at the stream's current version (of two concurrent writes of one file only one wins: 409).

A put whose content hash is the file's current one appends nothing ("unchanged"); removing a file the log does
not hold appends nothing ("absent"). A batch is validated whole before anything is written, then appended in one
transaction (all or nothing): a binary file (NUL), a lone surrogate, an unsupported language or an invalid path
is a 422, a file over the size cap (ENGRAMLOG_MAX_CODE_FILE_BYTES) a 413.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from sqlalchemy import Engine

from domain.code.languages import binary_problem, file_size_problem, language_of, repo_problem
from domain.errors import ContentTooLarge, InvalidPayload
from domain.events import (
    CodeFilePut,
    CodeFileRemoved,
    NewEvent,
    code_file_stream,
    has_lone_surrogate,
    validate_payload,
)
from domain.knowledge.paths import path_problem
from domain.privacy import NO_POLICY, PrivacyPolicy, code_file_excluded
from domain.text import content_hash
from eventstore.append import append
from eventstore.stream import last_event
from infra.settings import get_settings
from infra.wake import appended

Action = Literal["put", "removed", "unchanged", "absent", "excluded"]


@dataclass(frozen=True)
class FileInput:
    path: str
    content: str | None = None  # None with remove=True
    remove: bool = False
    language: str | None = None  # None: by the path's extension


@dataclass(frozen=True)
class FileWritten:
    path: str
    action: Action
    content_hash: str | None
    version: int  # the file stream's version after this write (0: never put)
    position: int | None = None


def _checked(repo: str, f: FileInput) -> tuple[str, dict[str, Any]]:
    """(event type, validated payload), or the reason the file is refused."""
    problem = path_problem(f.path)
    if problem:
        raise InvalidPayload(f"path {f.path!r}: {problem}")
    if f.remove:
        if f.content is not None:
            raise InvalidPayload(f"{f.path}: a removal carries no content")
        return CodeFileRemoved.type_name(), validate_payload(CodeFileRemoved, {"repo": repo, "path": f.path})
    if not isinstance(f.content, str):
        raise InvalidPayload(f"{f.path}: content must be text")
    problem = binary_problem(f.content)
    if problem:
        raise InvalidPayload(f"{f.path}: {problem}; only source text is indexed")
    if has_lone_surrogate(f.content):
        raise InvalidPayload(f"{f.path}: text must be valid Unicode (a lone surrogate is not)")
    too_large = file_size_problem(f.content, get_settings().limits.max_code_file_bytes)
    if too_large:
        raise ContentTooLarge(f"{f.path}: {too_large}")
    language = f.language or language_of(f.path)
    if language is None:
        raise InvalidPayload(f"{f.path}: not a source file of a supported language (by its extension)")
    return CodeFilePut.type_name(), validate_payload(CodeFilePut, {
        "repo": repo, "path": f.path, "content": f.content, "content_hash": content_hash(f.content),
        "language": language})


def write_files(engine: Engine, tenant: str, repo: str, files: Sequence[FileInput], metadata: dict[str, Any],
                policy: PrivacyPolicy = NO_POLICY) -> list[FileWritten]:
    """Put or remove each file (all validated first, then one transaction). Answers in input order. A file the
    privacy policy excludes (`<repo>/<path>`) is not written, and answered the same whether the log holds it or not:
    its answer ("unchanged", "removed" or "absent", its version) would tell what the log holds: it is answered
    "excluded" (the batch goes on, so an index of a repository holding one still works)."""
    problem = repo_problem(repo)
    if problem:
        raise InvalidPayload(f"repository {repo!r}: {problem}")
    if not files:
        raise InvalidPayload("a batch needs at least one file")
    limit = get_settings().limits.max_batch
    if len(files) > limit:
        raise InvalidPayload(f"a batch holds at most {limit} files, got {len(files)}")
    if len({f.path for f in files}) != len(files):
        raise InvalidPayload("a batch names the same file twice")
    checked = [_checked(repo, f) for f in files]
    plans: list[tuple[NewEvent | None, FileWritten]] = []
    with engine.begin() as conn:
        for type_, data in checked:
            if code_file_excluded(policy, repo, data["path"]):
                plans.append((None, FileWritten(data["path"], "excluded", None, 0, None)))
                continue
            stream = code_file_stream(repo, data["path"])
            last = last_event(conn, tenant, stream)
            head = last.stream_version if last is not None else 0
            current = last.data["content_hash"] if last is not None and last.is_a(CodeFilePut) else None
            # Nothing appended: the position of the write that made the file what it is (read-your-writes).
            was = last.position if last is not None else None
            if type_ == CodeFilePut.type_name() and current == data["content_hash"]:
                plans.append((None, FileWritten(data["path"], "unchanged", current, head, was)))
            elif type_ == CodeFileRemoved.type_name() and current is None:
                plans.append((None, FileWritten(data["path"], "absent", None, head, was)))
            else:
                put = type_ == CodeFilePut.type_name()
                plans.append((NewEvent(type_, stream, data, expected_version=head),
                              FileWritten(data["path"], "put" if put else "removed",
                                          data["content_hash"] if put else None, head + 1)))
        events = [e for e, _ in plans if e is not None]
        positions = iter(append(conn, tenant, events, metadata))
    appended(len(events))
    return [w if e is None else replace(w, position=next(positions)) for e, w in plans]


__all__ = ["FileInput", "FileWritten", "write_files"]
