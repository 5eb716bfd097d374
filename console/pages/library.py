"""Sessions and the knowledge library: GET /console/sessions (list), /console/sessions/{id} (messages, sent and
pending), GET /console/knowledge (documents), /console/knowledge/{path} (a document's sections), through the
API's routes (their privacy gate included)."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from api.routes import knowledge as knowledge_routes
from api.routes import sessions as session_routes
from console.pages.common import Db, Who, api
from console.render import page
from domain.knowledge.sections import split_sections

router = APIRouter(prefix="/console", include_in_schema=False)


@router.get("/sessions", response_class=HTMLResponse)
def sessions(request: Request, who: Who, db: Db,
             cursor: str | None = Query(default=None, max_length=300)) -> HTMLResponse:
    found = api(session_routes.get_sessions, who, db, cursor=cursor, limit=100)
    return page(request, "sessions.html", who, "Sessions · Engramlog console", sessions=found["sessions"],
                next_cursor=found["next_cursor"])


@router.get("/sessions/{session_id}", response_class=HTMLResponse)
def session(request: Request, session_id: str, who: Who, db: Db,
            after_seq: int = Query(default=0, ge=0, le=2**31 - 1)) -> HTMLResponse:
    found = api(session_routes.get_messages, session_id, who, db, after_seq=after_seq, limit=200,
                include_unsent=True)
    return page(request, "session.html", who, f"Session {session_id} · Engramlog console", session_id=session_id,
                messages=found["messages"], next_after_seq=found["next_after_seq"])


@router.get("/knowledge", response_class=HTMLResponse)
def documents(request: Request, who: Who, db: Db) -> HTMLResponse:
    found = api(knowledge_routes.get_documents, who, db, limit=1000)
    return page(request, "documents.html", who, "Knowledge · Engramlog console", documents=found.documents,
                next_after=found.next_after)


@router.get("/knowledge/{path:path}", response_class=HTMLResponse)
def document(request: Request, path: str, who: Who, db: Db) -> HTMLResponse:
    doc = api(knowledge_routes.get_knowledge, path, who, db)
    return page(request, "document.html", who, f"{doc.path} · Engramlog console", doc=doc,
                sections=split_sections(doc.content))
