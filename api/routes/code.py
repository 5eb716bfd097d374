"""Code intelligence over HTTP:

    POST /v1/code/{repo}/files                     a batch of files put ({path, content, language?}) or removed
                                                   ({path, remove: true}); an unchanged content hash is a no-op;
                                                   all or nothing (a binary file 422, an oversized one 413)
    GET  /v1/code/{repo}/files                     the repository's files: path, content_hash, language, counts
                                                   (what `engramlog code index` compares with; ?after= pages)
    GET  /v1/code/{repo}/symbols?q=                symbol search (BM25 over split names, signatures, docstrings)
    GET  /v1/code/{repo}/symbols/{qualified_name}  one symbol: {symbol, kind, file, lines, source, callers,
                                                   callees, ...}; ?file= picks one of several of that name

Every answer passes the tenant's privacy gate with the path `<repo>/<file path>`: an excluded file is unknown.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field
from sqlalchemy import Engine

from api.context import Caller, caller, engine
from api.schemas import Body
from domain.code.languages import repo_problem
from domain.errors import InvalidPayload, NotFound
from domain.knowledge.paths import MAX_PATH_CHARS
from recall.code_symbols import has_repo, list_files, symbol_answer, symbols_named
from recall.domains.base import DomainQuery
from recall.domains.code import CodeDomain
from recall.privacy import policy_of
from recall.scope import Scope
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
    action: str  # put | removed | unchanged | absent
    content_hash: str | None
    version: int
    position: int | None


class FilesWrittenOut(BaseModel):
    repo: str
    files: list[FileWrittenOut]
    written: int


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
    done = write_files(db, who.tenant, _repo(repo), files, who.metadata())
    return FilesWrittenOut(repo=repo, files=[FileWrittenOut(**d.__dict__) for d in done],
                           written=sum(1 for d in done if d.action in ("put", "removed")))


@router.get("/{repo}/files")
def get_files(repo: str, who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
              after: Annotated[str, Query(max_length=MAX_PATH_CHARS)] = "",
              limit: Annotated[int, Query(ge=1, le=10_000)] = 1000) -> dict[str, Any]:
    _no_nul(after=after)
    with db.connect() as conn:
        files, next_after = list_files(conn, who.tenant, _repo(repo), policy_of(conn, who.tenant), after, limit)
    return {"repo": repo, "files": files, "next_after": next_after}


@router.get("/{repo}/symbols")
def search_symbols(repo: str, who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
                   q: Annotated[str, Query(min_length=1, max_length=2000)],
                   k: Annotated[int, Query(ge=1, le=100)] = 10, callees: bool = False) -> dict[str, Any]:
    _no_nul(q=q)
    with db.connect() as conn:
        policy = policy_of(conn, who.tenant)
    query = DomainQuery(Scope(who.tenant), q, k, datetime.now(UTC), policy,
                        options={"repo": _repo(repo), "callees": callees})
    answer = CodeDomain().search(db, query)
    return {"repo": repo, "query": q, "reason": answer.reason,
            "symbols": [{**h.fields, "source": h.content, "score": h.score, "handle": h.handle}
                        for h in answer.results]}


@router.get("/{repo}/symbols/{qualified_name:path}")
def get_symbol(repo: str, qualified_name: str, who: Annotated[Caller, Depends(caller)],
               db: Annotated[Engine, Depends(engine)],
               file: Annotated[str | None, Query(max_length=MAX_PATH_CHARS)] = None) -> dict[str, Any]:
    _no_nul(qualified_name=qualified_name, file=file)
    with db.connect() as conn:
        policy = policy_of(conn, who.tenant)
        rows = symbols_named(conn, who.tenant, _repo(repo), qualified_name, policy, file)
        if not rows:
            known = has_repo(conn, who.tenant, repo)
            raise NotFound(f"no symbol {qualified_name!r} in repository {repo!r}" if known
                           else f"no repository {repo!r}")
        answer = symbol_answer(conn, who.tenant, rows[0], policy)
    answer["also"] = [{"file": r.path, "lines": [r.start_line, r.end_line]} for r in rows[1:]]
    return answer


__all__ = ["router"]
