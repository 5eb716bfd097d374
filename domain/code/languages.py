"""Which files are source code of a supported language, a repository's name, and a file's module name.

A module name is the file's path as dotted segments, without its extension (`pkg/util/strings.py` →
`pkg.util.strings`); a package's index file names its folder (`__init__.py`, `index.ts`, `mod.rs`). Java names
its module by the file's `package` declaration and Go by the file's folder (a Go package is a folder): both are
handled by the parser, which reads the package clause.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

LANGUAGES: dict[str, str] = {  # extension → tree-sitter language name
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
}
SUPPORTED = frozenset(LANGUAGES.values())
_INDEX_FILES = {"python": {"__init__"}, "javascript": {"index"}, "typescript": {"index"}, "tsx": {"index"},
                "rust": {"mod", "lib", "main"}}
MAX_REPO_CHARS = 100
_REPO = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*\Z")
DEFAULT_MAX_CODE_FILE_BYTES = 1024 * 1024  # the setting's default (ENGRAMLOG_MAX_CODE_FILE_BYTES)


def language_of(path: str) -> str | None:
    """The language of a file by its extension, or None when it is not a supported source file."""
    return LANGUAGES.get(PurePosixPath(path).suffix.lower())


def repo_problem(repo: object) -> str | None:
    """Why `repo` is not a valid repository name (one path segment of letters, digits, '.', '_', '-'), or None."""
    if not isinstance(repo, str) or not repo:
        return "a repository name is a non-empty string"
    if len(repo) > MAX_REPO_CHARS:
        return f"a repository name is at most {MAX_REPO_CHARS} characters"
    if not _REPO.match(repo):
        return "a repository name holds letters, digits, '.', '_' and '-' only, and starts with a letter or digit"
    return None


def check_repo(repo: str) -> str:
    problem = repo_problem(repo)
    if problem:
        raise ValueError(problem)
    return repo


def module_of(path: str, language: str) -> tuple[str, bool]:
    """(the dotted module name of a file by its path, whether it is a package's index file)."""
    p = PurePosixPath(path)
    parts = list(p.parent.parts) if str(p.parent) != "." else []
    is_index = p.stem in _INDEX_FILES.get(language, set())
    if not is_index:
        parts.append(p.stem)
    return ".".join(parts), is_index


def file_size_problem(content: str, max_bytes: int) -> str | None:
    size = len(content.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        return f"the file is {size} bytes as UTF-8; the limit is {max_bytes}"
    return None


def binary_problem(content: str) -> str | None:
    """Why `content` is not source text (a NUL character: a binary file decoded by chance), or None."""
    if "\x00" in content:
        return "a binary file (it holds a NUL byte)"
    return None


__all__ = ["DEFAULT_MAX_CODE_FILE_BYTES", "LANGUAGES", "MAX_REPO_CHARS", "SUPPORTED", "binary_problem", "check_repo",
           "file_size_problem", "language_of", "module_of", "repo_problem"]
