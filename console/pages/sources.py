"""Transcripts and code, through the API's routes (their privacy gate included):

    GET /console/transcripts                               the transcripts (by id, paged)
    GET /console/transcripts/{id}?from=                    a transcript's lines, numbered, a page at a time
    GET /console/code                                      the repositories
    GET /console/code/{repo}?q=&after=                     its files, and a symbol search
    GET /console/code/{repo}/symbols/{qualified_name}?file=   a symbol: its source, callers and callees
"""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from api.routes import code as code_routes
from api.routes import transcripts as transcript_routes
from console.pages.common import Db, Refused, Who, api
from console.render import page
from domain.knowledge.paths import MAX_PATH_CHARS

router = APIRouter(prefix="/console", include_in_schema=False)
LINES = 400  # a transcript's lines a page
FILES = 500  # a repository's files a page


@router.get("/transcripts", response_class=HTMLResponse)
def transcripts(request: Request, who: Who, db: Db,
                after: str = Query(default="", max_length=256)) -> HTMLResponse:
    found = api(transcript_routes.get_list, who, db, after=after, limit=200)
    return page(request, "transcripts.html", who, "Transcripts · Engramlog console",
                transcripts=found.transcripts, next_after=found.next_after)


@router.get("/transcripts/{transcript_id}", response_class=HTMLResponse)
def transcript(request: Request, transcript_id: str, who: Who, db: Db,
               first: int = Query(default=1, alias="from", ge=1, le=2**31 - 1)) -> HTMLResponse:
    found = api(transcript_routes.get_lines, transcript_id, who, db, first=first, last=first + LINES - 1)
    lines = found.text.splitlines()
    return page(request, "transcript.html", who, f"Transcript {transcript_id} · Engramlog console",
                t=found, lines=list(enumerate(lines, found.first)),
                next_from=found.last + 1 if found.last < found.lines_total else None,
                prev_from=max(1, found.first - LINES) if found.first > 1 else None)


@router.get("/code", response_class=HTMLResponse)
def repos(request: Request, who: Who, db: Db) -> HTMLResponse:
    found = api(code_routes.get_repos, who, db)
    return page(request, "code_repos.html", who, "Code · Engramlog console", repos=found.repos)


@router.get("/code/{repo}", response_class=HTMLResponse)
def repo(request: Request, repo: str, who: Who, db: Db, q: str = Query(default="", max_length=2000),
         after: str = Query(default="", max_length=MAX_PATH_CHARS)) -> HTMLResponse:
    files = api(code_routes.get_files, repo, who, db, after=after, limit=FILES)
    if not files["files"] and not after:  # nothing visible: unknown, as GET of one of its symbols answers
        raise Refused(404, f"no repository {repo!r}")
    found = api(code_routes.search_symbols, repo, who, db, q=q, k=20) if q.strip() else None
    return page(request, "code_repo.html", who, f"{repo} · Code · Engramlog console", repo=repo, q=q,
                files=files["files"], next_after=files["next_after"], found=found)


@router.get("/code/{repo}/symbols/{qualified_name:path}", response_class=HTMLResponse)
def symbol(request: Request, repo: str, qualified_name: str, who: Who, db: Db,
           file: str | None = Query(default=None, max_length=MAX_PATH_CHARS)) -> HTMLResponse:
    found = api(code_routes.get_symbol, repo, qualified_name, who, db, file=file)
    return page(request, "code_symbol.html", who, f"{qualified_name} · {repo} · Engramlog console", repo=repo,
                s=found)
