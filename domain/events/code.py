"""Code intelligence's events: a repository's source file put (its whole content: the code read models rebuild
from the log like every other) and removed.

Stream: code-<uuid5 of (repo, path)> per file (code_file_stream); a put is appended at the stream's current
version, so of two concurrent puts of one file only one wins. A symbol's decay decisions go on
code-symbol-<uuid5 of (repo, path, qualified name)> (symbol_stream): a symbol is its qualified name in its file,
whatever version of the file holds it.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import Field, field_validator, model_validator

from domain.code.languages import SUPPORTED, binary_problem, check_repo
from domain.events.base import DecayStatus, EventSchema, SystemEvent
from domain.knowledge.paths import check_path
from domain.text import content_hash

_NAMESPACE = uuid.UUID("0b7e3c52-3d0f-4c1e-9a47-6a2f8e5d9c11")  # engramlog code files


class CodeFilePut(EventSchema):
    """A producer put a source file's content at a path of a repository. Stream: code_file_stream(repo, path)."""

    repo: str
    path: str
    content: str
    content_hash: str  # sha256 of content, checked
    language: str

    _repo = field_validator("repo")(check_repo)
    _path = field_validator("path")(check_path)

    @field_validator("language")
    @classmethod
    def _known_language(cls, value: str) -> str:
        if value not in SUPPORTED:
            raise ValueError(f"language {value!r} is not supported; supported: {', '.join(sorted(SUPPORTED))}")
        return value

    @model_validator(mode="after")
    def _text(self) -> CodeFilePut:
        problem = binary_problem(self.content)
        if problem:
            raise ValueError(problem)
        if content_hash(self.content) != self.content_hash:
            raise ValueError("content_hash is not the sha256 of content")
        return self


class CodeFileRemoved(EventSchema):
    """A producer removed a file from a repository: its symbols and calls go."""

    repo: str
    path: str

    _repo = field_validator("repo")(check_repo)
    _path = field_validator("path")(check_path)


class CodeSymbolStatusChanged(SystemEvent):
    """System decision taken with a clock (decay of an unreferenced symbol, workers/reference_decay.py): a replay
    reproduces it exactly. Stream: symbol_stream(repo, path, qualified_name)."""

    repo: str
    path: str
    qualified_name: str
    from_status: DecayStatus
    to_status: DecayStatus
    reason: str
    clock: datetime
    inputs: dict[str, Any] = Field(default_factory=dict)


def code_file_stream(repo: str, path: str) -> str:
    return f"code-{uuid.uuid5(_NAMESPACE, repo + chr(0) + path)}"


def symbol_stream(repo: str, path: str, qualified_name: str) -> str:
    return f"code-symbol-{uuid.uuid5(_NAMESPACE, chr(0).join((repo, path, qualified_name)))}"


def own_code_stream(type_name: str, data: dict[str, Any]) -> str | None:
    """The stream a CodeFilePut or CodeFileRemoved (validated `data`) belongs on; None for other types."""
    if type_name in (CodeFilePut.type_name(), CodeFileRemoved.type_name()):
        return code_file_stream(data["repo"], data["path"])
    return None


__all__ = ["CodeFilePut", "CodeFileRemoved", "CodeSymbolStatusChanged", "code_file_stream", "own_code_stream",
           "symbol_stream"]
