"""Code intelligence over HTTP:

    GET  /v1/code                                  the tenant's repositories: files and symbols counted
    POST /v1/code/{repo}/files                     a batch of files put ({path, content, language?}) or removed
                                                   ({path, remove: true}); an unchanged content hash is a no-op;
                                                   all or nothing (a binary file 422, an oversized one 413)
    GET  /v1/code/{repo}/files                     the repository's files: path, content_hash, language, counts
                                                   (what `engramlog code index` compares with; ?after= pages)
    GET  /v1/code/{repo}/symbols?q=                symbol search (BM25 over split names, signatures, docstrings)
    GET  /v1/code/{repo}/symbols/{qualified_name}  one symbol: {symbol, kind, file, lines, source, callers,
                                                   callees, ...}; ?file= picks one of several of that name

Both symbol routes take ?as_of= (a log position or timestamp): the symbols as the store held them then (a symbol
not defined yet, or no longer, is a 404), sliced from the text its file had; the call graph is not versioned, so
as of a position a symbol answers no callers or callees (`edges: false`).

Every answer passes the tenant's privacy gate with the path `<repo>/<file path>`: an excluded file is unknown.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field
from sqlalchemy import Engine

from api.context import Caller, caller, engine
from api.read_your_writes import reads
from api.schemas import AsOf, Body
from domain.code.languages import repo_problem
from domain.errors import InvalidPayload, NotFound
from domain.knowledge.paths import MAX_PATH_CHARS
from recall.domains.base import DomainQuery
from recall.domains.code import CodeDomain, list_files, list_repos, symbol_answer, symbols_named
from recall.privacy import policy_of
from recall.scope import Scope
from recall.timeframe import TimeFrame, resolve_as_of
from services.code import FileInput, write_files

router = APIRouter(prefix="/v1/code", tags=["code"])


class FileIn(Body):
    path: str = Field(max_length=MAX_PATH_CHARS)
    content: str | None = None
    remove: bool = False
    language: str | None = Field(default=None, max_length=32)


class FilesIn(Body):
    files: list[FileIn] = Field(min_length=1)


class FileWrittenOut(BaseModel):
    path: str
    action: str  # put | removed | unchanged | absent | excluded (by the privacy policy: nothing written)
    content_hash: str | None
    version: int
    position: int | None


class FilesWrittenOut(BaseModel):
    repo: str
    files: list[FileWrittenOut]
    written: int
    position: int | None  # the batch's: its files' highest (read-your-writes: a read at it sees them all)


class CodeFileOut(BaseModel):
    path: str
    content_hash: str
    language: str
    symbols: int
    calls: int
    parse_errors: int  # tree-sitter error and missing nodes (0: parsed cleanly)
    first_error_line: int | None
    version: int  # the stream version of its CodeFilePut


class RepoOut(BaseModel):
    repo: str
    files: int  # the files the privacy policy lets the caller see
    symbols: int


class ReposOut(BaseModel):
    repos: list[RepoOut]


class CodeFilesOut(BaseModel):
    repo: str
    files: list[CodeFileOut]
    next_after: str | None  # pass it back as `after` for the next page


class CallerOut(BaseModel):
    symbol: str  # the calling symbol's qualified name
    file: str
    line: int  # of the call


class CalleeOut(BaseModel):
    symbol: str  # the resolved qualified name, else the name as written
    file: str | None  # None: not resolved to a definition in the repository
    line: int | None  # where it is defined
    call_line: int
    resolved: bool
    how: str  # how it was resolved (domain/code/resolve.py), or why not
    candidates: int


class SymbolLocationOut(BaseModel):
    file: str
    lines: list[int]


class SymbolHandleOut(BaseModel):
    repo: str
    file: str
    qualified_name: str
    content_hash: str


class SymbolFieldsOut(BaseModel):
    symbol: str  # the qualified name
    name: str
    kind: str  # function | method | class | ...
    repo: str
    file: str
    lines: list[int]  # [first, last], 1-based
    signature: str
    doc: str


class SymbolOut(SymbolFieldsOut):
    source: str  # the exact slice of its file
    content_hash: str  # its file's
    callers: list[CallerOut]  # at most recall.domains.code.MAX_EDGES
    callers_total: int
    unresolved_calls: int  # calls of its name that could name several symbols
    ref_count: int
    edges: bool  # False as of a position: the call graph is not versioned, no callers or callees answered
    callees: list[CalleeOut]
    also: list[SymbolLocationOut]  # other definitions of that name (pick one with ?file=)


class SymbolHitOut(SymbolFieldsOut):
    content_hash: str
    callers: list[CallerOut]
    callers_total: int
    unresolved_calls: int
    ref_count: int
    edges: bool  # False as of a position (no callers or callees answered)
    callees: list[CalleeOut] = Field(default_factory=list)  # answered only with ?callees=true
    status: str  # active | dormant | archived
    source: str
    score: float
    handle: SymbolHandleOut  # names the symbol for the drill


class SymbolSearchOut(BaseModel):
    repo: str
    query: str
    reason: str | None  # why nothing (or little) was found
    symbols: list[SymbolHitOut]


def _no_nul(**values: str | None) -> None:
    """PostgreSQL text holds no NUL: a parameter with one is refused, never sent to the database."""
    for name, value in values.items():
        if value is not None and "\x00" in value:
            raise InvalidPayload(f"{name} must not contain NUL (\\u0000) characters")


def _repo(repo: str) -> str:
    problem = repo_problem(repo)
    if problem:
        raise InvalidPayload(f"repository {repo!r}: {problem}")
    return repo


@router.post("/{repo}/files", response_model=FilesWrittenOut)
def post_files(repo: str, body: FilesIn, who: Annotated[Caller, Depends(caller)],
               db: Annotated[Engine, Depends(engine)]) -> FilesWrittenOut:
    files = [FileInput(f.path, f.content, f.remove, f.language) for f in body.files]
    with db.connect() as conn:  # an excluded file is not written (services/code.py write_files)
        policy = policy_of(conn, who.tenant)
    done = write_files(db, who.tenant, _repo(repo), files, who.metadata(), policy)
    return FilesWrittenOut(repo=repo, files=[FileWrittenOut(**d.__dict__) for d in done],
                           written=sum(1 for d in done if d.action in ("put", "removed")),
                           position=max((d.position for d in done if d.position is not None), default=None))


@router.get("", response_model=ReposOut, dependencies=[reads(CodeDomain)])
def get_repos(who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)]) -> ReposOut:
    with db.connect() as conn:
        repos = list_repos(conn, who.tenant, policy_of(conn, who.tenant))
    return ReposOut(repos=[RepoOut(**r) for r in repos])


@router.get("/{repo}/files", response_model=CodeFilesOut, dependencies=[reads(CodeDomain)])
def get_files(repo: str, who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
              after: Annotated[str, Query(max_length=MAX_PATH_CHARS)] = "",
              limit: Annotated[int, Query(ge=1, le=10_000)] = 1000) -> dict[str, Any]:
    _no_nul(after=after)
    with db.connect() as conn:
        files, next_after = list_files(conn, who.tenant, _repo(repo), policy_of(conn, who.tenant), after, limit)
    return {"repo": repo, "files": files, "next_after": next_after}


# exclude_unset: a search answers callees only when asked (absent, not an empty list, otherwise)
@router.get("/{repo}/symbols", response_model=SymbolSearchOut, response_model_exclude_unset=True,
            dependencies=[reads(CodeDomain)])
def search_symbols(repo: str, who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
                   q: Annotated[str, Query(min_length=1, max_length=2000)],
                   k: Annotated[int, Query(ge=1, le=100)] = 10, callees: bool = False,
                   as_of: Annotated[AsOf, Query()] = None) -> dict[str, Any]:
    _no_nul(q=q)
    frame = TimeFrame(as_of=resolve_as_of(db, who.tenant, as_of))
    with db.connect() as conn:
        policy = policy_of(conn, who.tenant)
    query = DomainQuery(Scope(who.tenant), q, k, datetime.now(UTC), policy,
                        options={"repo": _repo(repo), "callees": callees}, frame=frame)
    answer = CodeDomain().search(db, query)
    return {"repo": repo, "query": q, "reason": answer.reason,
            "symbols": [{**h.fields, "source": h.content, "score": h.score, "handle": h.handle}
                        for h in answer.results]}


@router.get("/{repo}/symbols/{qualified_name:path}", response_model=SymbolOut, dependencies=[reads(CodeDomain)])
def get_symbol(repo: str, qualified_name: str, who: Annotated[Caller, Depends(caller)],
               db: Annotated[Engine, Depends(engine)],
               file: Annotated[str | None, Query(max_length=MAX_PATH_CHARS)] = None,
               as_of: Annotated[AsOf, Query()] = None) -> dict[str, Any]:
    _no_nul(qualified_name=qualified_name, file=file)
    frame = TimeFrame(as_of=resolve_as_of(db, who.tenant, as_of))
    with db.connect() as conn:
        policy = policy_of(conn, who.tenant)
        rows = symbols_named(conn, who.tenant, _repo(repo), qualified_name, policy, file, frame)
        if not rows and frame.as_of is not None:
            raise NotFound(f"no symbol {qualified_name!r} in repository {repo!r} as of position {frame.as_of}")
        if not rows:
            # a repository whose every file the policy excludes is unknown, as one never indexed
            known = bool(list_files(conn, who.tenant, repo, policy, "", 1)[0])
            raise NotFound(f"no symbol {qualified_name!r} in repository {repo!r}" if known
                           else f"no repository {repo!r}")
        answer = symbol_answer(conn, who.tenant, rows[0], policy, frame=frame)
    answer["also"] = [{"file": r.path, "lines": [r.start_line, r.end_line]} for r in rows[1:]]
    return answer


__all__ = ["router"]
