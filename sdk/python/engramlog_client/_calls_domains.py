"""The recall domains' own endpoints as Calls (knowledge, transcripts, code, sessions) and deep recall; see
_calls.py for what a Call is. These writes are idempotent as they are, so a retry never doubles them: a put of
the current content appends nothing (knowledge, transcripts, code files), a message_id a session holds is ignored
(the client chooses each message's id before the first attempt), a message already sent stays sent."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx

from engramlog_client._calls import Call, model, query_params, segment
from engramlog_client.models.code import (
    CodeFileIn,
    CodeFilesIn,
    CodeFilesList,
    CodeFilesWritten,
    CodeRepos,
    Symbol,
    SymbolSearch,
)
from engramlog_client.models.deep_recall import BlindSpots, Budgets, DeepRecalled, DeepRecallIn
from engramlog_client.models.imports import ChatImported
from engramlog_client.models.knowledge import (
    BatchDocumentIn,
    Document,
    DocumentIn,
    DocumentsIn,
    DocumentsList,
    DocumentsWritten,
    DocumentWritten,
    Drilled,
)
from engramlog_client.models.sessions import (
    ChatMessage,
    MarkedSent,
    MessagesAppended,
    MessagesIn,
    MessagesPage,
    ResumeContext,
    SessionsPage,
)
from engramlog_client.models.transcripts import (
    ChunkDrilled,
    TranscriptLines,
    TranscriptsList,
    TranscriptText,
    TranscriptWritten,
)


def _as(kind: type[Any], value: Any) -> Any:
    return value if isinstance(value, kind) else kind.model_validate(value)


# ------------------------------------------------------------------------------------------------ knowledge


def _doc_path(path: str) -> str:
    return quote(path, safe="/")


def put_document(path: str, content: str, title: str | None = None, tags: Sequence[str] | None = None,
                 metadata: Mapping[str, Any] | None = None, project: str | None = None) -> Call[DocumentWritten]:
    body = DocumentIn.model_validate({k: v for k, v in {"content": content, "title": title, "tags": tags,
                                                        "metadata": metadata, "project": project}.items()
                                      if v is not None})
    return Call("PUT", f"/v1/knowledge/{_doc_path(path)}", model(DocumentWritten), json=body.body(),
                wrote=lambda out: [out.position])


def get_document(path: str, project: str | None, version: int | None,
                 as_of: int | datetime | None = None) -> Call[Document]:
    return Call("GET", f"/v1/knowledge/{_doc_path(path)}", model(Document),
                params=query_params(project=project, version=version, as_of=as_of), reads_own_writes=True)


def delete_document(path: str, project: str | None) -> Call[DocumentWritten]:
    return Call("DELETE", f"/v1/knowledge/{_doc_path(path)}", model(DocumentWritten),
                params=query_params(project=project), wrote=lambda out: [out.position])


def put_documents(documents: Sequence[BatchDocumentIn | Mapping[str, Any]]) -> Call[DocumentsWritten]:
    body = DocumentsIn(documents=[_as(BatchDocumentIn, d) for d in documents])
    return Call("POST", "/v1/knowledge/batch", model(DocumentsWritten), json=body.body(),
                wrote=lambda out: [d.position for d in out.documents])


def list_documents(project: str | None, prefix: str | None, after: str | None,
                   limit: int | None) -> Call[DocumentsList]:
    return Call("GET", "/v1/knowledge", model(DocumentsList),
                params=query_params(project=project, prefix=prefix, after=after, limit=limit), reads_own_writes=True)


def get_section(path: str, heading_path: str, project: str | None, content_hash: str | None, version: int | None,
                recall_id: uuid.UUID | str | None, min_position: int | None = None,
                as_of: int | datetime | None = None) -> Call[Drilled]:
    return Call("GET", "/v1/knowledge-sections", model(Drilled), params=query_params(
        path=path, heading_path=heading_path, project=project, content_hash=content_hash, version=version,
        recall_id=recall_id, min_position=min_position, as_of=as_of), reads_own_writes=True)


# ------------------------------------------------------------------------------------------------ imports


def import_chat(export: str | bytes, format: str | None, agent_id: str | None, project: str | None,  # noqa: A002
                remember: bool, dry_run: bool) -> Call[ChatImported]:
    body = export.encode("utf-8") if isinstance(export, str) else export
    params = query_params(format=format, agent_id=agent_id, project=project, remember=remember or None,
                          dry_run=dry_run or None)
    return Call("POST", "/v1/import/chat", model(ChatImported), content=body, params=params,
                headers={"content-type": "application/json"}, wrote=lambda out: [out.last_position])


# ------------------------------------------------------------------------------------------------ transcripts


def put_transcript(transcript_id: str, text: str | bytes, format: str | None) -> Call[TranscriptWritten]:  # noqa: A002
    body = text.encode("utf-8") if isinstance(text, str) else text
    return Call("PUT", f"/v1/transcripts/{segment(transcript_id)}", model(TranscriptWritten), content=body,
                params=query_params(format=format), headers={"content-type": "text/plain; charset=utf-8"},
                wrote=lambda out: [out.position])


def list_transcripts(after: str | None, limit: int | None) -> Call[TranscriptsList]:
    return Call("GET", "/v1/transcripts", model(TranscriptsList), params=query_params(after=after, limit=limit),
                reads_own_writes=True)


def transcript(transcript_id: str, as_of: int | datetime | None = None) -> Call[TranscriptText]:
    def parse(response: httpx.Response) -> TranscriptText:
        h = response.headers
        return TranscriptText.model_validate({
            "transcript_id": transcript_id, "version": h.get("x-transcript-version"),
            "content_hash": h.get("x-content-hash"), "format": h.get("x-transcript-format"),
            "text": response.content.decode("utf-8")})  # the bytes as put: never re-guessed from the headers

    return Call("GET", f"/v1/transcripts/{segment(transcript_id)}", parse, params=query_params(as_of=as_of),
                reads_own_writes=True)


def transcript_lines(transcript_id: str, first: int | None, last: int | None,
                     as_of: int | datetime | None = None) -> Call[TranscriptLines]:
    return Call("GET", f"/v1/transcripts/{segment(transcript_id)}/lines", model(TranscriptLines),
                params=query_params(**{"from": first, "to": last, "as_of": as_of}), reads_own_writes=True)


def transcript_chunk(transcript_id: str, ord_: int, content_hash: str | None,
                     recall_id: uuid.UUID | str | None, as_of: int | datetime | None = None) -> Call[ChunkDrilled]:
    return Call("GET", f"/v1/transcripts/{segment(transcript_id)}/chunks/{int(ord_)}", model(ChunkDrilled),
                params=query_params(content_hash=content_hash, recall_id=recall_id, as_of=as_of),
                reads_own_writes=True)


# ------------------------------------------------------------------------------------------------ code


def _repo(repo: str) -> str:
    return f"/v1/code/{segment(repo)}"


def put_code_files(repo: str, files: Sequence[CodeFileIn | Mapping[str, Any]]) -> Call[CodeFilesWritten]:
    body = CodeFilesIn(files=[_as(CodeFileIn, f) for f in files])
    return Call("POST", f"{_repo(repo)}/files", model(CodeFilesWritten), json=body.body(),
                wrote=lambda out: [f.position for f in out.files])


def code_repos() -> Call[CodeRepos]:
    return Call("GET", "/v1/code", model(CodeRepos), reads_own_writes=True)


def code_files(repo: str, after: str | None, limit: int | None) -> Call[CodeFilesList]:
    return Call("GET", f"{_repo(repo)}/files", model(CodeFilesList), params=query_params(after=after, limit=limit),
                reads_own_writes=True)


def search_symbols(repo: str, query: str, k: int | None, callees: bool,
                   as_of: int | datetime | None = None) -> Call[SymbolSearch]:
    return Call("GET", f"{_repo(repo)}/symbols", model(SymbolSearch),
                params=query_params(q=query, k=k, callees=callees or None, as_of=as_of), reads_own_writes=True)


def symbol(repo: str, qualified_name: str, file: str | None, as_of: int | datetime | None = None) -> Call[Symbol]:
    return Call("GET", f"{_repo(repo)}/symbols/{quote(qualified_name, safe='')}", model(Symbol),
                params=query_params(file=file, as_of=as_of), reads_own_writes=True)


# ------------------------------------------------------------------------------------------------ sessions


def _session(session_id: str) -> str:
    return f"/v1/sessions/{segment(session_id)}"


def append_messages(session_id: str, messages: Sequence[ChatMessage | Mapping[str, Any]], agent_id: str | None,
                    project: str | None) -> Call[MessagesAppended]:
    # Each message gets its id here (not on the server), so a message sent again is recognisably the same one.
    items = [_as(ChatMessage, m) for m in messages]
    items = [m if m.message_id else m.model_copy(update={"message_id": str(uuid.uuid4())}) for m in items]
    body = MessagesIn(messages=items, agent_id=agent_id, project=project)
    return Call("POST", f"{_session(session_id)}/messages", model(MessagesAppended), json=body.body(),
                wrote=lambda out: [out.position])


def mark_sent(session_id: str, message_id: str) -> Call[MarkedSent]:
    return Call("POST", f"{_session(session_id)}/messages/{segment(message_id)}/sent", model(MarkedSent),
                wrote=lambda out: [out.position])


def list_sessions(agent_id: str | None, project: str | None, cursor: str | None,
                  limit: int | None) -> Call[SessionsPage]:
    return Call("GET", "/v1/sessions", model(SessionsPage),
                params=query_params(agent_id=agent_id, project=project, cursor=cursor, limit=limit),
                reads_own_writes=True)


def session_messages(session_id: str, after_seq: int | None, limit: int | None,
                     include_unsent: bool, as_of: int | datetime | None = None) -> Call[MessagesPage]:
    return Call("GET", f"{_session(session_id)}/messages", model(MessagesPage), params=query_params(
        after_seq=after_seq, limit=limit, include_unsent=include_unsent or None, as_of=as_of), reads_own_writes=True)


def resume_context(session_id: str, budget_tokens: int | None,
                   min_position: int | None = None) -> Call[ResumeContext]:
    return Call("GET", f"{_session(session_id)}/resume", model(ResumeContext),
                params=query_params(budget_tokens=budget_tokens, min_position=min_position), reads_own_writes=True)


# ------------------------------------------------------------------------------------------------ deep recall


def deep_recall(question: str, agent_id: str | None, project: str | None, session_id: str | None,
                max_depth: int | None, budgets: Budgets | Mapping[str, Any] | None,
                min_position: int | None = None) -> Call[DeepRecalled]:
    body = DeepRecallIn(question=question, agent_id=agent_id, project=project, session_id=session_id,
                        max_depth=max_depth, budgets=None if budgets is None else _as(Budgets, budgets),
                        min_position=min_position)
    # A run costs model tokens and may take long: sent again only when it cannot have started (a 503, or the
    # connection never made), never after a timeout.
    return Call("POST", "/v1/deep_recall", model(DeepRecalled), json=body.body(), idempotent=False,
                reads_own_writes=True)


def blind_spots(agent_id: str | None, project: str | None, session_id: str | None,
                min_position: int | None = None) -> Call[BlindSpots]:
    return Call("GET", "/v1/blind_spots", model(BlindSpots),
                params=query_params(agent_id=agent_id, project=project, session_id=session_id,
                                    min_position=min_position), reads_own_writes=True)
