"""Code intelligence: POST /v1/code/{repo}/files (a batch put or removed), GET /v1/code/{repo}/files,
GET /v1/code/{repo}/symbols?q= (search), GET /v1/code/{repo}/symbols/{qualified_name}."""

from __future__ import annotations

from typing import Any

from engramlog_client.models.common import Request, Response


class CodeFileIn(Request):
    """A file put (`content`) or removed (`remove=True`); an unchanged content hash is a no-op."""

    path: str
    content: str | None = None
    remove: bool | None = None
    language: str | None = None  # else from the extension


class CodeFilesIn(Request):
    files: list[CodeFileIn]


class CodeFileWritten(Response):
    path: str
    action: str  # put | removed | unchanged | absent | excluded (by the privacy policy: nothing written)
    content_hash: str | None = None
    version: int
    position: int | None = None


class CodeFilesWritten(Response):
    repo: str
    files: list[CodeFileWritten]
    written: int  # put or removed
    position: int | None = None  # the batch's (its files' highest)


class CodeFile(Response):
    path: str
    content_hash: str
    language: str
    symbols: int
    calls: int
    parse_errors: int
    first_error_line: int | None = None
    version: int


class CodeRepo(Response):
    repo: str
    files: int  # the files the privacy policy lets the caller see
    symbols: int


class CodeRepos(Response):
    repos: list[CodeRepo]


class CodeFilesList(Response):
    repo: str
    files: list[CodeFile]
    next_after: str | None = None  # pass it back as `after` for the next page


class SymbolCaller(Response):
    symbol: str
    file: str
    line: int


class SymbolCallee(Response):
    symbol: str
    file: str | None = None  # None: not resolved to a definition in the repository
    line: int | None = None  # where it is defined
    call_line: int
    resolved: bool
    how: str
    candidates: int


class SymbolLocation(Response):
    file: str
    lines: list[int]


class Symbol(Response):
    """A symbol: its definition (the exact slice of its file), its 1-hop callers and its callees."""

    symbol: str  # the qualified name
    name: str
    kind: str  # function | method | class | ...
    repo: str
    file: str
    lines: list[int]  # [first, last], 1-based
    signature: str
    doc: str
    source: str
    content_hash: str
    callers: list[SymbolCaller] = []
    callers_total: int = 0
    edges: bool = True  # whether callers and callees were read (False as_of a position: the call graph is current)
    unresolved_calls: int = 0
    ref_count: int = 0
    callees: list[SymbolCallee] | None = None  # a search answers them only when asked (callees=True)
    also: list[SymbolLocation] = []  # other definitions of that name (pick one with file=)


class SymbolHit(Symbol):
    score: float
    handle: dict[str, Any]  # names the symbol for the drill: repo, file, qualified_name, content_hash


class SymbolSearch(Response):
    repo: str
    query: str
    reason: str | None = None  # why nothing (or little) was found
    symbols: list[SymbolHit]
