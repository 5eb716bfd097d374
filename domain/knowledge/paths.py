"""A document's path in the knowledge library: a relative POSIX path, checked before anything is written.

Refused, each with its reason: empty, longer than MAX_PATH_CHARS, absolute ("/x"), a backslash (a Windows
separator would make "a\\b" and "a/b" two names for one file), NUL or another control character, an empty
segment ("a//b", a trailing "/"), a "." or ".." segment (traversal), a lone surrogate (not Unicode text).
"""

from __future__ import annotations

import re

MAX_PATH_CHARS = 512
DEFAULT_MAX_DOCUMENT_BYTES = 2 * 1024 * 1024  # the setting's default (ENGRAMLOG_MAX_DOCUMENT_BYTES)
MAX_TITLE_CHARS = 512

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def path_problem(path: object) -> str | None:
    """Why `path` is not a valid document path, or None when it is."""
    if not isinstance(path, str):
        return "a document path is a string"
    if not path:
        return "a document path must not be empty"
    if len(path) > MAX_PATH_CHARS:
        return f"a document path is at most {MAX_PATH_CHARS} characters (got {len(path)})"
    if "\x00" in path:
        return "a document path must not contain NUL"
    if _CONTROL.search(path):
        return "a document path must not contain control characters"
    if _SURROGATE.search(path):
        return "a document path must be valid Unicode (a lone surrogate is not)"
    if "\\" in path:
        return "a document path uses '/' as its separator, never a backslash"
    if path.startswith("/"):
        return "a document path is relative (no leading '/')"
    for segment in path.split("/"):
        if segment == "":
            return "a document path has no empty segment ('//' or a trailing '/')"
        if segment in (".", ".."):
            return f"a document path has no {segment!r} segment"
    return None


def check_path(path: str) -> str:
    """`path` when valid; else ValueError with the reason (a pydantic validator's shape)."""
    problem = path_problem(path)
    if problem:
        raise ValueError(problem)
    return path


def document_size_problem(content: str, max_bytes: int) -> str | None:
    """Why `content` is too large to keep as one document (its UTF-8 size over `max_bytes`), or None."""
    size = len(content.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        return f"the document is {size} bytes as UTF-8; the limit is {max_bytes}"
    return None


__all__ = ["DEFAULT_MAX_DOCUMENT_BYTES", "MAX_PATH_CHARS", "MAX_TITLE_CHARS", "check_path",
           "document_size_problem", "path_problem"]
