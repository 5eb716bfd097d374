"""The knowledge library over HTTP:

    PUT    /v1/knowledge/{path}     a document's content: JSON {content, title?, tags?, metadata?, project?}, or a
                                    text/markdown or text/plain body (UTF-8) with ?project=&title=&tag=
    GET    /v1/knowledge            the documents of ?project= (by path; ?prefix=, ?after= pages): path, version,
                                    content_hash, status (what `engramlog knowledge sync` compares with)
    GET    /v1/knowledge/{path}     the document at its current version or ?version= (from the log)
    DELETE /v1/knowledge/{path}     retire it
    POST   /v1/knowledge/batch      a folder import: {"documents": [{path, content, ...}]}, all or nothing
    GET    /v1/knowledge-sections   the drill: ?path=&heading_path= and the handle's content_hash / version, or
                                    neither (the current section); recall_id ties it to its recall

The drill has its own prefix: a heading path holds " > " and may hold "/", so it cannot follow {path} in a URL.
Every answer passes the tenant's privacy gate (`_policy`): an excluded document is a 404, like an unknown one.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import ValidationError
from sqlalchemy import Connection, Engine
from starlette.concurrency import run_in_threadpool

from api.context import Caller, caller, engine
from api.knowledge_schemas import (
    ContentHash,
    DocumentIn,
    DocumentListedOut,
    DocumentOut,
    DocumentsIn,
    DocumentsListOut,
    DocumentsWrittenOut,
    DocumentWrittenOut,
    DrillOut,
    DrillPath,
    HeadingPath,
    SectionOut,
    SectionVersion,
)
from api.read_your_writes import reads
from api.schemas import AsOf
from domain.errors import InvalidPayload, NotFound
from domain.privacy import PrivacyPolicy, document_excluded
from recall.document_log import document_at, unknown_document
from recall.domains.knowledge import KnowledgeDomain, drill, list_documents
from recall.privacy import policy_of
from recall.timeframe import TimeFrame, resolve_as_of
from services.knowledge import (
    DocumentInput,
    DocumentWritten,
    put_document,
    put_documents,
    retire_document,
)

router = APIRouter(prefix="/v1", tags=["knowledge"])
_TEXT_TYPES = ("text/markdown", "text/plain", "text/x-markdown")


def _policy(conn: Connection, tenant: str) -> PrivacyPolicy:
    """The tenant's privacy policy in force (the one place this module reads it)."""
    return policy_of(conn, tenant)


def _reasons(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors())


async def _document(request: Request, path: str, project: str | None, title: str | None,
                    tags: list[str]) -> DocumentInput:
    raw = await request.body()
    media = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    if media in _TEXT_TYPES:
        try:
            content = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidPayload(f"the document is not UTF-8 text (byte {exc.start})") from None
        try:
            body = DocumentIn(content=content, title=title, tags=tags, project=project)
        except ValidationError as exc:
            raise InvalidPayload(_reasons(exc)) from None
    elif media == "application/json":
        try:
            body = DocumentIn.model_validate_json(raw)
        except ValidationError as exc:
            if any(e["type"] == "json_invalid" for e in exc.errors()):
                raise InvalidPayload("the request body is not valid JSON (UTF-8)") from None
            raise InvalidPayload(_reasons(exc)) from None
        if project is not None and body.project not in (None, project):
            raise InvalidPayload("project is given twice, differently (query and body)")
        body = body.model_copy(update={"project": body.project or project})
    else:
        raise InvalidPayload(f"content-type {media!r}: send application/json, text/markdown or text/plain")
    return DocumentInput(path, body.content, body.title, list(body.tags), body.metadata, body.project)


@router.get("/knowledge", response_model=DocumentsListOut, dependencies=[reads(KnowledgeDomain)])
def get_documents(who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
                  project: str | None = None, prefix: Annotated[str | None, Query(max_length=512)] = None,
                  after: Annotated[str, Query(max_length=512)] = "",
                  limit: Annotated[int, Query(ge=1, le=10_000)] = 1000) -> DocumentsListOut:
    with db.connect() as conn:
        docs, next_after = list_documents(conn, who.tenant, project, _policy(conn, who.tenant), prefix, after, limit)
    return DocumentsListOut(documents=[DocumentListedOut(**d) for d in docs], next_after=next_after)


@router.post("/knowledge/batch", response_model=DocumentsWrittenOut, status_code=201)
def post_batch(body: DocumentsIn, who: Annotated[Caller, Depends(caller)],
               db: Annotated[Engine, Depends(engine)]) -> DocumentsWrittenOut:
    docs = [DocumentInput(d.path, d.content, d.title, list(d.tags), d.metadata, d.project) for d in body.documents]
    with db.connect() as conn:
        policy = _policy(conn, who.tenant)
    done = put_documents(db, who.tenant, docs, who.metadata(), policy)
    return DocumentsWrittenOut(documents=[DocumentWrittenOut(**d.__dict__) for d in done])


def _put(db: Engine, tenant: str, doc: DocumentInput, metadata: dict[str, Any]) -> DocumentWritten:
    with db.connect() as conn:  # an excluded document is not written (services/knowledge.py put_documents)
        policy = _policy(conn, tenant)
    return put_document(db, tenant, doc, metadata, policy)


@router.put("/knowledge/{path:path}", response_model=DocumentWrittenOut)
async def put_knowledge(path: str, request: Request, who: Annotated[Caller, Depends(caller)],
                        db: Annotated[Engine, Depends(engine)], project: str | None = None,
                        title: str | None = None,
                        tag: Annotated[list[str] | None, Query()] = None) -> DocumentWrittenOut:
    doc = await _document(request, path, project, title, tag or [])
    done = await run_in_threadpool(_put, db, who.tenant, doc, who.metadata())
    return DocumentWrittenOut(**done.__dict__)


@router.get("/knowledge/{path:path}", response_model=DocumentOut, dependencies=[reads(KnowledgeDomain)])
def get_knowledge(path: str, who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
                  project: str | None = None, version: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
                  as_of: Annotated[AsOf, Query()] = None) -> DocumentOut:
    """The document now (or at `version`), or `as_of` a log position or timestamp: as it stood then (404 if it
    was not put yet)."""
    position = resolve_as_of(db, who.tenant, as_of)
    with db.connect() as conn:
        doc = document_at(conn, who.tenant, path, project, version, position)
        if document_excluded(_policy(conn, who.tenant), doc.path, doc.tags, doc.project):
            raise NotFound(unknown_document(path, version))  # as for an unknown one
    return DocumentOut(**doc.__dict__)


@router.delete("/knowledge/{path:path}", response_model=DocumentWrittenOut)
def delete_knowledge(path: str, who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
                     project: str | None = None) -> DocumentWrittenOut:
    """Retire a document; an excluded one answers as an unknown one (404), nothing written."""
    with db.connect() as conn:
        try:
            doc = document_at(conn, who.tenant, path, project)
        except NotFound:
            doc = None  # retire_document answers it
        if doc is not None and document_excluded(_policy(conn, who.tenant), doc.path, doc.tags, doc.project):
            raise NotFound(unknown_document(path, project=project))
    return DocumentWrittenOut(**retire_document(db, who.tenant, path, project, who.metadata()).__dict__)


@router.get("/knowledge-sections", response_model=DrillOut, dependencies=[reads(KnowledgeDomain)])
def get_section(who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
                path: DrillPath, heading_path: HeadingPath, project: str | None = None,
                content_hash: ContentHash = None, version: SectionVersion = None,
                recall_id: uuid.UUID | None = None, as_of: Annotated[AsOf, Query()] = None) -> DrillOut:
    """The section a handle names, and the live one at its heading now, or `as_of` a log position or timestamp
    (both as they stood then; a section not put yet: 404)."""
    frame = TimeFrame(as_of=resolve_as_of(db, who.tenant, as_of))
    with db.connect() as conn:
        policy = _policy(conn, who.tenant)
    done = drill(db, who.tenant, path, heading_path, project, policy, who.metadata(), content_hash, version,
                 recall_id, frame)
    f = done.found
    return DrillOut(section=SectionOut(**f["section"]), current=SectionOut(**f["current"]) if f["current"] else None,
                    current_differs=f["current_differs"], drill_id=done.drill_id, position=done.position)


__all__ = ["router"]
