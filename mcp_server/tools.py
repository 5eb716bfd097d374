"""The MCP tools, each a thin call of the SDK's AsyncEngramlog: the same validation, auth, privacy gate and errors
as the HTTP API (a refusal comes back as an MCP tool error carrying the service's status and reason)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated, Any, Literal

from engramlog_client import AsyncEngramlog, EngramlogError
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

# How a tool gets its client: the stdio server has one for the process; the mounted one makes one per call that
# speaks to the app in-process with the caller's own bearer key.
ClientFor = Callable[[Context], AbstractAsyncContextManager[AsyncEngramlog]]

INSTRUCTIONS = """Engramlog is this agent's long-term memory. `remember` what is worth keeping (facts, decisions,
preferences, corrections); `recall` before answering from memory (it sees your own earlier writes); `recall_multi`
to search memories, knowledge documents and sessions at once, then `get_section` to read a knowledge result in
full; `supersede` a memory that became wrong; `feedback` on the results you used; `history` for how a memory
changed; `sessions_append` and `resume_context` to keep and resume a conversation."""

AgentId = Annotated[str | None, Field(description="The agent whose memory this is (e.g. 'assistant')",
                                      max_length=128)]
Project = Annotated[str | None, Field(description="The project the memory belongs to", max_length=128)]
SessionId = Annotated[str | None, Field(description="The conversation (session) id, to scope to one session",
                                        max_length=128)]
MemoryId = Annotated[uuid.UUID, Field(description="A memory_id, as remember or recall answered it")]


class ChatMessage(BaseModel):
    role: Annotated[Literal["system", "user", "assistant", "tool", "developer"], Field(description="Who said it")]
    content: Annotated[str, Field(description="What was said (text)")]
    name: Annotated[str | None, Field(description="The speaker's or tool's name, if any")] = None
    tool_call_id: Annotated[str | None, Field(description="For a tool result: the call it answers")] = None


def _refusal(exc: EngramlogError) -> ToolError:
    detail = "; ".join(map(str, exc.detail)) if isinstance(exc.detail, list) else exc.detail
    if exc.status == 0:
        return ToolError(f"Engramlog is unreachable: {detail}")
    if exc.error == "unexpected_answer":
        return ToolError(f"Engramlog answered in a shape this client does not know: {detail}")
    return ToolError(f"Engramlog refused the call (HTTP {exc.status} {exc.error or ''}): {detail}".replace(" )", ")"))


def _results(answer: Any) -> list[dict[str, Any]]:
    return [{"memory_id": str(r.memory_id), "content": r.content, "score": round(r.score, 4), "kind": r.kind,
             "occurred_at": r.occurred_at.isoformat(), "metadata": r.metadata} for r in answer.results]


def build_server(client_for: ClientFor) -> MCPServer:
    server = MCPServer("engramlog", instructions=INSTRUCTIONS, version="0.1.0")

    async def call(ctx: Context, fn: Callable[[AsyncEngramlog], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        async with client_for(ctx) as client:
            try:
                return await fn(client)
            except EngramlogError as exc:
                raise _refusal(exc) from None

    @server.tool()
    async def remember(content: Annotated[str, Field(description="The memory, as one self-contained statement")],
                       ctx: Context, agent_id: AgentId = None, project: Project = None, session_id: SessionId = None,
                       kind: Annotated[str, Field(description="observation, decision, preference, fact, ...")]
                       = "observation",
                       tags: Annotated[list[str] | None, Field(description="Labels to filter by later")] = None,
                       must_keep: Annotated[bool, Field(description="Keep it even if the salience gate would "
                                                                    "not (an explicit instruction to remember)")]
                       = False) -> dict[str, Any]:
        """Record a memory. Answers its memory_id, log position and the governor's disposition (active, staging,
        or discard for filler; `reinforced` when it repeats a memory already held)."""
        async def run(c: AsyncEngramlog) -> dict[str, Any]:
            out = await c.remember(content, agent_id=agent_id, project=project, session_id=session_id, kind=kind,
                                   tags=tags or [], must_keep=must_keep or None)  # type: ignore[arg-type]
            return out.model_dump(mode="json", exclude_none=True)
        return await call(ctx, run)

    @server.tool()
    async def recall(query: Annotated[str, Field(description="What to look for, in natural language")],
                     ctx: Context, agent_id: AgentId = None, project: Project = None, session_id: SessionId = None,
                     k: Annotated[int, Field(ge=1, le=100, description="How many results at most")] = 10,
                     kinds: Annotated[list[str] | None, Field(description="Only memories of these kinds")] = None,
                     min_position: Annotated[int | None, Field(ge=0, description="Wait until this log position "
                                                                                 "is recallable (a write's position)")]
                     = None) -> dict[str, Any]:
        """Search memories (hybrid keyword + vector, ranked). Sees this connection's own earlier writes. Answers
        recall_id (for feedback) and results (memory_id, content, score); `abstained` when nothing is relevant."""
        async def run(c: AsyncEngramlog) -> dict[str, Any]:
            out = await c.recall(query, k=k, agent_id=agent_id, project=project, session_id=session_id,
                                 kinds=kinds or [], min_position=min_position)  # type: ignore[arg-type]
            return {"recall_id": str(out.recall_id), "results": _results(out), "abstained": out.abstained}
        return await call(ctx, run)

    @server.tool()
    async def recall_multi(query: Annotated[str, Field(description="What to look for, in natural language")],
                           ctx: Context, agent_id: AgentId = None, project: Project = None,
                           session_id: SessionId = None,
                           domains: Annotated[list[str] | None, Field(description="Domains to search, in order "
                                                                                  "(memories, knowledge, ...); "
                                                                                  "default: every one with data")]
                           = None,
                           k: Annotated[int | None, Field(ge=1, le=100, description="Results shared by all "
                                                                                    "buckets")] = None,
                           min_position: Annotated[int | None, Field(ge=0, description="Wait until this log "
                                                                                       "position is recallable")]
                           = None) -> dict[str, Any]:
        """Search several domains at once: one bucket per domain (scores compare within a bucket only). A
        knowledge result's `handle` names its section: pass path and heading_path to get_section to read it."""
        async def run(c: AsyncEngramlog) -> dict[str, Any]:
            out = await c.recall_multi(query, domains=domains, k=k, agent_id=agent_id, project=project,
                                       session_id=session_id, min_position=min_position)
            return {"recall_id": str(out.recall_id), "buckets": [
                {"domain": b.domain, "reason": b.reason, "results": [
                    {"content": r.content, "score": round(r.score, 4), "handle": r.handle,
                     "memory_id": str(r.memory_id) if r.memory_id else None} for r in b.results]}
                for b in out.buckets]}
        return await call(ctx, run)

    @server.tool()
    async def deep_recall(question: Annotated[str, Field(description="A question one search cannot answer "
                                                                      "(across sessions, periods, documents)")],
                          ctx: Context, agent_id: AgentId = None, project: Project = None,
                          session_id: SessionId = None,
                          max_depth: Annotated[int, Field(ge=1, le=3, description="1: plain sub-queries; up to "
                                                                                  "3: nested search loops")] = 1
                          ) -> dict[str, Any]:
        """Deep recall: the service's model searches memory in several steps and answers (a quick search answers
        directly when it is confident: `shortcut`). Slower and costlier than recall; use it for hard questions."""
        async def run(c: AsyncEngramlog) -> dict[str, Any]:
            out = await c.deep_recall(question, agent_id=agent_id, project=project, session_id=session_id,
                                      max_depth=max_depth)
            return out.model_dump(mode="json")
        return await call(ctx, run)

    @server.tool()
    async def get_section(path: Annotated[str, Field(description="The document path of a knowledge result's "
                                                                 "handle")],
                          heading_path: Annotated[str, Field(description="The handle's heading_path (e.g. "
                                                                         "'Deploys > Rollback')")],
                          ctx: Context, project: Project = None,
                          content_hash: Annotated[str | None, Field(description="The handle's content_hash: that "
                                                                                "exact version of the section")]
                          = None,
                          recall_id: Annotated[str | None, Field(description="The recall that returned it")] = None
                          ) -> dict[str, Any]:
        """Read a knowledge section in full (the drill): its exact text, and whether the document changed since."""
        async def run(c: AsyncEngramlog) -> dict[str, Any]:
            out = await c.get_section(path, heading_path, project=project, content_hash=content_hash,
                                      recall_id=recall_id)
            return {"text": out.section.text, "path": out.section.path, "heading_path": out.section.heading_path,
                    "version": out.section.version, "current_differs": out.current_differs,
                    "current_text": out.current.text if out.current and out.current_differs else None}
        return await call(ctx, run)

    @server.tool()
    async def supersede(memory_id: MemoryId,
                        content: Annotated[str, Field(description="The corrected memory")],
                        reason: Annotated[str, Field(description="Why the old one is wrong or outdated")],
                        ctx: Context) -> dict[str, Any]:
        """Replace a memory that became wrong; the old one stays in its history. Fails if it was already
        superseded (supersede its successor: see history)."""
        async def run(c: AsyncEngramlog) -> dict[str, Any]:
            return (await c.supersede(memory_id, content, reason)).model_dump(mode="json")
        return await call(ctx, run)

    @server.tool()
    async def feedback(recall_id: Annotated[str, Field(description="The recall_id of a recall")], ctx: Context,
                       used: Annotated[list[uuid.UUID], Field(description="memory_ids of results you used")] = [],  # noqa: B006
                       not_useful: Annotated[list[uuid.UUID], Field(description="memory_ids of results that were "
                                                                                "not useful")] = []  # noqa: B006
                       ) -> dict[str, Any]:
        """Say which results of a recall you used or found not useful: it tunes what recall ranks first."""
        async def run(c: AsyncEngramlog) -> dict[str, Any]:
            return (await c.feedback(recall_id, used=used, not_useful=not_useful)).model_dump(mode="json")
        return await call(ctx, run)

    @server.tool()
    async def history(memory_id: MemoryId, ctx: Context) -> dict[str, Any]:
        """How a memory changed: the supersede chain (oldest → newest), with when, why and by whom."""
        async def run(c: AsyncEngramlog) -> dict[str, Any]:
            return (await c.history(memory_id)).model_dump(mode="json")
        return await call(ctx, run)

    @server.tool()
    async def sessions_append(session_id: Annotated[str, Field(description="The conversation's id",
                                                               max_length=128)],
                              messages: Annotated[list[ChatMessage], Field(description="Messages, in order")],
                              ctx: Context, agent_id: AgentId = None, project: Project = None) -> dict[str, Any]:
        """Append messages to a conversation's transcript, so it can be resumed later (resume_context)."""
        async def run(c: AsyncEngramlog) -> dict[str, Any]:
            out = await c.append_messages(session_id, [m.model_dump(exclude_none=True) for m in messages],
                                          agent_id=agent_id, project=project)
            return out.model_dump(mode="json")
        return await call(ctx, run)

    @server.tool()
    async def resume_context(session_id: Annotated[str, Field(description="The conversation's id",
                                                              max_length=128)],
                             ctx: Context,
                             budget_tokens: Annotated[int | None, Field(ge=1, description="Token budget of the "
                                                                                          "context")] = None
                             ) -> dict[str, Any]:
        """What to put in front of the model to resume a conversation: its recent messages and checkpoints
        within the budget, as text (`context`)."""
        async def run(c: AsyncEngramlog) -> dict[str, Any]:
            out = await c.resume_context(session_id, budget_tokens)
            return {"session_id": out.session_id, "context": out.context, "tokens": out.tokens}
        return await call(ctx, run)

    return server


TOOL_NAMES = ("remember", "recall", "recall_multi", "deep_recall", "get_section", "supersede", "feedback",
              "history", "sessions_append", "resume_context")
__all__ = ["TOOL_NAMES", "ClientFor", "build_server"]
