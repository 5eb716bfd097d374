"""The async client's methods for the recall domains' own endpoints (knowledge, transcripts, code, sessions) and
deep recall; mixed into `AsyncEngramlog` (aio.py), which sends the Calls."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from engramlog_client import _calls_domains as calls
from engramlog_client._calls import Call
from engramlog_client.models.code import CodeFileIn, CodeFilesList, CodeFilesWritten, CodeRepos, Symbol, SymbolSearch
from engramlog_client.models.deep_recall import BlindSpot, Budgets, DeepRecalled
from engramlog_client.models.imports import ChatImported
from engramlog_client.models.knowledge import BatchDocumentIn, Document, DocumentsList, DocumentWritten, Drilled
from engramlog_client.models.sessions import (
    ChatMessage,
    MarkedSent,
    MessagesAppended,
    MessagesPage,
    ResumeContext,
    SessionMessage,
    SessionsPage,
)
from engramlog_client.models.transcripts import (
    ChunkDrilled,
    TranscriptLines,
    TranscriptsList,
    TranscriptText,
    TranscriptWritten,
)

T = TypeVar("T")


class AsyncDomainMethods:
    async def send(self, call: Call[T], consistent: bool = True) -> T:
        raise NotImplementedError  # AsyncEngramlog.send

    # -------------------------------------------------------------------------------------------- knowledge

    async def put_document(self, path: str, content: str, *, title: str | None = None,
                           tags: Sequence[str] | None = None, metadata: Mapping[str, Any] | None = None,
                           project: str | None = None) -> DocumentWritten:
        """Put a document's content at its path (unchanged content: nothing appended, `changed` False)."""
        return await self.send(calls.put_document(path, content, title, tags, metadata, project))

    async def get_document(self, path: str, *, project: str | None = None, version: int | None = None,
                           as_of: int | datetime | None = None) -> Document:
        """The document now (or at `version`); `as_of` (a log position or an aware datetime): as it stood then
        (NotFoundError if not yet recorded)."""
        return await self.send(calls.get_document(path, project, version, as_of))

    async def delete_document(self, path: str, *, project: str | None = None) -> DocumentWritten:
        """Retire a document (its sections stay as history)."""
        return await self.send(calls.delete_document(path, project))

    async def put_documents(self, documents: Sequence[BatchDocumentIn | Mapping[str, Any]]) -> list[DocumentWritten]:
        """Put several documents in one transaction (all or nothing)."""
        return (await self.send(calls.put_documents(documents))).documents

    async def list_documents(self, *, project: str | None = None, prefix: str | None = None,
                             after: str | None = None, limit: int | None = None) -> DocumentsList:
        return await self.send(calls.list_documents(project, prefix, after, limit))

    async def get_section(self, path: str, heading_path: str, *, project: str | None = None,
                          content_hash: str | None = None, version: int | None = None,
                          recall_id: uuid.UUID | str | None = None, min_position: int | None = None,
                          as_of: int | datetime | None = None) -> Drilled:
        """The drill: the exact section a recall result's handle names; `as_of` (a log position or an aware datetime):
        as it stood then (NotFoundError if not yet recorded)."""
        return await self.send(calls.get_section(path, heading_path, project, content_hash, version, recall_id,
                                                 min_position, as_of))

    # -------------------------------------------------------------------------------------------- imports

    async def import_chat(self, export: str | bytes, *, format: str | None = None,  # noqa: A002
                          agent_id: str | None = None, project: str | None = None, remember: bool = False,
                          dry_run: bool = False) -> ChatImported:
        """Import a chat export as the file is (ChatGPT's or Claude's conversations.json, OpenAI-style message
        JSONL; `format` chatgpt|claude|jsonl, else detected; at most 32 MiB): each conversation a session and a
        transcript, with remember=True each user message a memory through the governor. A re-import appends
        nothing; a bad export is refused whole (EngramlogError, nothing written)."""
        return await self.send(calls.import_chat(export, format, agent_id, project, remember, dry_run))

    # -------------------------------------------------------------------------------------------- transcripts

    async def put_transcript(self, transcript_id: str, text: str | bytes, *,
                             format: str | None = None) -> TranscriptWritten:  # noqa: A002
        """Put a transcript verbatim (JSONL of messages or `[timestamp] ROLE: text` lines; `format` jsonl|text,
        else detected): only the chunks new to its log are written; the same text again appends nothing."""
        return await self.send(calls.put_transcript(transcript_id, text, format))

    async def list_transcripts(self, *, after: str | None = None, limit: int | None = None) -> TranscriptsList:
        """The tenant's transcripts by id; pass `after=page.next_after` for the next page."""
        return await self.send(calls.list_transcripts(after, limit))

    async def transcript(self, transcript_id: str, *, as_of: int | datetime | None = None) -> TranscriptText:
        """The current version's text, byte for byte the last put, with its version and content hash; `as_of`: the
        version held then."""
        return await self.send(calls.transcript(transcript_id, as_of))

    async def transcript_lines(self, transcript_id: str, first: int = 1, last: int | None = None, *,
                               as_of: int | datetime | None = None) -> TranscriptLines:
        """Lines `first`..`last` (1-based, inclusive; default: to the end) of the current version (`as_of`: of the
        version held then), exactly."""
        return await self.send(calls.transcript_lines(transcript_id, first, last, as_of))

    async def transcript_chunk(self, transcript_id: str, ord: int, *, content_hash: str | None = None,  # noqa: A002
                               recall_id: uuid.UUID | str | None = None,
                               as_of: int | datetime | None = None) -> ChunkDrilled:
        """The drill: the chunk at `ord` (with a result handle's `content_hash`: that exact chunk); `as_of` (a log
        position or an aware datetime): as it stood then (NotFoundError if not yet recorded)."""
        return await self.send(calls.transcript_chunk(transcript_id, ord, content_hash, recall_id, as_of))

    # -------------------------------------------------------------------------------------------- code

    async def put_code_files(self, repo: str, files: Sequence[CodeFileIn | Mapping[str, Any]]) -> CodeFilesWritten:
        """Index a batch of files ({path, content, language?}) or remove some ({path, remove: True}); all or
        nothing; an unchanged content hash is a no-op."""
        return await self.send(calls.put_code_files(repo, files))

    async def code_repos(self) -> CodeRepos:
        """The tenant's repositories, each with its files and symbols counted."""
        return await self.send(calls.code_repos())

    async def code_files(self, repo: str, *, after: str | None = None, limit: int | None = None) -> CodeFilesList:
        """The repository's files (path, content_hash, counts); pass `after=page.next_after` for the next page."""
        return await self.send(calls.code_files(repo, after, limit))

    async def search_symbols(self, repo: str, query: str, *, k: int | None = None, callees: bool = False,
                             as_of: int | datetime | None = None) -> SymbolSearch:
        """Symbol search (BM25 over split names, signatures, docstrings), each hit with its source; `as_of` (a log
        position or an aware datetime): the symbols defined then."""
        return await self.send(calls.search_symbols(repo, query, k, callees, as_of))

    async def symbol(self, repo: str, qualified_name: str, *, file: str | None = None,
                     as_of: int | datetime | None = None) -> Symbol:
        """One symbol by its qualified name: source, callers, callees (`file=` picks one of several); `as_of`: as
        defined then, without call edges (NotFoundError if it was not defined then)."""
        return await self.send(calls.symbol(repo, qualified_name, file, as_of))

    # -------------------------------------------------------------------------------------------- sessions

    async def append_messages(self, session_id: str, messages: Sequence[ChatMessage | Mapping[str, Any]], *,
                              agent_id: str | None = None, project: str | None = None) -> MessagesAppended:
        """Append chat messages (OpenAI's shape: {role, content, tool_calls, ...}) to a session, in order."""
        return await self.send(calls.append_messages(session_id, messages, agent_id, project))

    async def mark_sent(self, session_id: str, message_id: str) -> MarkedSent:
        """Mark a pending message (appended with sent=False) sent."""
        return await self.send(calls.mark_sent(session_id, message_id))

    async def list_sessions(self, *, agent_id: str | None = None, project: str | None = None,
                            cursor: str | None = None, limit: int | None = None) -> SessionsPage:
        """Sessions, newest first, with counts and date ranges; pass `cursor=page.next_cursor` for the next."""
        return await self.send(calls.list_sessions(agent_id, project, cursor, limit))

    async def session_messages(self, session_id: str, *, after_seq: int | None = None, limit: int | None = None,
                               include_unsent: bool = False, as_of: int | datetime | None = None) -> MessagesPage:
        """A page of a session's messages in order; pass `after_seq=page.next_after_seq` for the next; `as_of`:
        those appended (and sent) by then."""
        return await self.send(calls.session_messages(session_id, after_seq, limit, include_unsent, as_of))

    async def iter_session_messages(self, session_id: str, *, include_unsent: bool = False,
                                    limit: int | None = None) -> AsyncIterator[SessionMessage]:
        """Every message of a session in order, page after page."""
        after: int | None = None
        while True:
            page = await self.session_messages(session_id, after_seq=after, limit=limit,
                                               include_unsent=include_unsent)
            for message in page.messages:
                yield message
            if page.next_after_seq is None:
                return
            after = page.next_after_seq

    async def resume_context(self, session_id: str, budget_tokens: int | None = None,
                             min_position: int | None = None) -> ResumeContext:
        """What to put in front of a model resuming the session, within `budget_tokens`."""
        return await self.send(calls.resume_context(session_id, budget_tokens, min_position))

    # -------------------------------------------------------------------------------------------- deep recall

    async def deep_recall(self, question: str, *, agent_id: str | None = None, project: str | None = None,
                          session_id: str | None = None, max_depth: int | None = None,
                          budgets: Budgets | Mapping[str, Any] | None = None,
                          min_position: int | None = None) -> DeepRecalled:
        """A question one search cannot answer: the server's model searches (shortcut first), and answers."""
        return await self.send(calls.deep_recall(question, agent_id, project, session_id, max_depth, budgets,
                                                 min_position))

    async def blind_spots(self, *, agent_id: str | None = None, project: str | None = None,
                          session_id: str | None = None, min_position: int | None = None) -> list[BlindSpot]:
        """The questions deep recall could not answer, live for the scope (knowledge gaps). A deep recall does not
        move last_position: pass its answer's `position` as min_position to see the blind spot it registered."""
        return (await self.send(calls.blind_spots(agent_id, project, session_id, min_position))).blind_spots
