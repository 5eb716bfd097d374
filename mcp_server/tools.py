"""The MCP tools, each a thin call of the SDK's AsyncEngramlog: the same validation, auth, privacy gate and errors
as the HTTP API (a refusal comes back as an MCP tool error carrying the service's status and reason). Each tool's
inputs are derived from its route's own declarations (mcp_server/inputs.py), so the two cannot disagree."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from engramlog_client import AsyncEngramlog, EngramlogError
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from api.deep_recall_schemas import DeepRecallIn
from api.knowledge_schemas import ContentHash, DrillPath, HeadingPath, SectionVersion
from api.recall_schemas import MultiRecallIn
from api.schemas import FeedbackIn, MemoryIn, MinPosition, RecallIn, SupersedeIn
from api.sessions_schemas import BatchIn, BudgetTokens, MessageIn
from mcp_server.inputs import inputs, part_of

# How a tool gets its client: the stdio server has one for the process; the mounted one makes one per call that
# speaks to the app in-process with the caller's own bearer key.
ClientFor = Callable[[Context], AbstractAsyncContextManager[AsyncEngramlog]]

INSTRUCTIONS = """Engramlog is this agent's long-term memory. `remember` what is worth keeping (facts, decisions,
preferences, corrections); `recall` before answering from memory (it sees your own earlier writes); `recall_multi`
to search memories, knowledge documents and sessions at once, then `get_section` to read a knowledge result in
full; `supersede` a memory that became wrong; `feedback` on the results you used; `history` for how a memory
changed; `sessions_append` and `resume_context` to keep and resume a conversation."""

AGENT = "The agent whose memory this is (e.g. 'assistant')"
PROJECT = "The project the memory belongs to"
SESSION = "The conversation (session) id, to scope to one session"
MEMORY = "A memory_id, as remember or recall answered it"
# Over stdio the session's one client sends its last write's position by itself; over /mcp (stateless) pass it.
WAIT = "Wait until this log position (a write's `position`) is applied; default: this session's last write"
SINCE = ("Only what happened at or after this ISO time with a timezone, or from the start of this date (UTC)"
         " (a memory's occurred_at, a message's time)")
UNTIL = ("Only what happened at or before this ISO time with a timezone, or to the end of this date (UTC)"
         " (a filter: nothing outside is answered)")
AS_OF = "Answer as the store stood then: a log position or an ISO time (memories recorded later are absent)"
ChatMessage = part_of(MessageIn, "ChatMessage", {
    "role": "Who said it", "content": "What was said (text)", "name": "The speaker's or tool's name, if any",
    "tool_call_id": "For a tool result: the call it answers"})


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
    @inputs({"content": "The memory, as one self-contained statement", "agent_id": AGENT, "project": PROJECT,
             "session_id": SESSION, "kind": "observation, decision, preference, fact, ...",
             "tags": "Labels to filter by later",
             "must_keep": "Keep it even if the salience gate would not (an explicit instruction to remember)"},
            MemoryIn)
    async def remember(ctx: Context, **args: Any) -> dict[str, Any]:
        """Record a memory. Answers its memory_id, log position and the governor's disposition (active, staging,
        or discard for filler; `reinforced` when it repeats a memory already held)."""
        async def run(c: AsyncEngramlog) -> dict[str, Any]:
            out = await c.remember(args.pop("content"), **{**args, "must_keep": args["must_keep"] or None})
            return out.model_dump(mode="json", exclude_none=True)
        return await call(ctx, run)

    @server.tool()
    @inputs({"query": "What to look for, in natural language", "agent_id": AGENT, "project": PROJECT,
             "session_id": SESSION, "k": "How many results at most", "kinds": "Only memories of these kinds",
             "min_position": WAIT, "since": SINCE, "until": UNTIL, "as_of": AS_OF}, RecallIn)
    async def recall(ctx: Context, **args: Any) -> dict[str, Any]:
        """Search memories (hybrid keyword + vector, ranked). Sees this connection's own earlier writes. Answers
        recall_id (for feedback) and results (memory_id, content, score); `abstained` when nothing is relevant."""
        async def run(c: AsyncEngramlog) -> dict[str, Any]:
            out = await c.recall(args.pop("query"), **args)
            return {"recall_id": str(out.recall_id), "results": _results(out), "abstained": out.abstained}
        return await call(ctx, run)

    @server.tool()
    @inputs({"query": "What to look for, in natural language", "agent_id": AGENT, "project": PROJECT,
             "session_id": SESSION,
             "domains": "Domains to search, in order (memories, knowledge, ...); default: every one with data",
             "k": "Results shared by all buckets", "min_position": WAIT, "since": SINCE, "until": UNTIL,
             "as_of": AS_OF},
            MultiRecallIn)
    async def recall_multi(ctx: Context, **args: Any) -> dict[str, Any]:
        """Search several domains at once: `results`, every domain's best by relevance (the chance, 0 to 1, that
        a result answers the query, comparable across domains), and one bucket per domain (scores compare within
        a bucket only). A knowledge result's `handle` names its section: pass path and heading_path to
        get_section to read it."""
        async def run(c: AsyncEngramlog) -> dict[str, Any]:
            out = await c.recall_multi(args.pop("query"), **args)
            return {"recall_id": str(out.recall_id), "results": [
                {"domain": r.domain, "relevance": round(r.relevance, 4), "content": r.content, "handle": r.handle,
                 "memory_id": str(r.memory_id) if r.memory_id else None} for r in out.results], "buckets": [
                {"domain": b.domain, "reason": b.reason, "results": [
                    {"content": r.content, "score": round(r.score, 4), "relevance": round(r.relevance, 4),
                     "handle": r.handle, "memory_id": str(r.memory_id) if r.memory_id else None}
                    for r in b.results]}
                for b in out.buckets]}
        return await call(ctx, run)

    @server.tool()
    @inputs({"question": "A question one search cannot answer (across sessions, periods, documents)",
             "agent_id": AGENT, "project": PROJECT, "session_id": SESSION,
             "max_depth": "1: plain sub-queries; up to 3: nested search loops", "min_position": WAIT},
            DeepRecallIn)
    async def deep_recall(ctx: Context, **args: Any) -> dict[str, Any]:
        """Deep recall: the service's model searches memory in several steps and answers (a quick search answers
        directly when it is confident: `shortcut`). Slower and costlier than recall; use it for hard questions."""
        async def run(c: AsyncEngramlog) -> dict[str, Any]:
            return (await c.deep_recall(args.pop("question"), **args)).model_dump(mode="json")
        return await call(ctx, run)

    @server.tool()
    @inputs({"path": "The document path of a knowledge result's handle",
             "heading_path": "The handle's heading_path (e.g. 'Deploys > Rollback')", "project": PROJECT,
             "content_hash": "The handle's content_hash: that exact version of the section",
             "version": "Or the document version to read it at", "recall_id": "The recall that returned it",
             "min_position": WAIT},
            path=DrillPath, heading_path=HeadingPath, project=(str | None, None), content_hash=(ContentHash, None),
            version=(SectionVersion, None), recall_id=(uuid.UUID | None, None), min_position=(MinPosition, None))
    async def get_section(ctx: Context, **args: Any) -> dict[str, Any]:
        """Read a knowledge section in full (the drill): its exact text, and whether the document changed since."""
        async def run(c: AsyncEngramlog) -> dict[str, Any]:
            out = await c.get_section(args.pop("path"), args.pop("heading_path"), **args)
            return {"text": out.section.text, "path": out.section.path, "heading_path": out.section.heading_path,
                    "version": out.section.version, "current_differs": out.current_differs,
                    "current_text": out.current.text if out.current and out.current_differs else None}
        return await call(ctx, run)

    @server.tool()
    @inputs({"memory_id": MEMORY, "content": "The corrected memory",
             "reason": "Why the old one is wrong or outdated"}, SupersedeIn, memory_id=uuid.UUID)
    async def supersede(ctx: Context, **args: Any) -> dict[str, Any]:
        """Replace a memory that became wrong; the old one stays in its history. Fails if it was already
        superseded (supersede its successor: see history)."""
        async def run(c: AsyncEngramlog) -> dict[str, Any]:
            return (await c.supersede(args["memory_id"], args["content"], args["reason"])).model_dump(mode="json")
        return await call(ctx, run)

    @server.tool()
    @inputs({"recall_id": "The recall_id of a recall",
             "items": "Each result you judged: its memory_id and verdict `used` or `not_useful`"},
            FeedbackIn, recall_id=uuid.UUID)
    async def feedback(ctx: Context, **args: Any) -> dict[str, Any]:
        """Say which results of a recall you used or found not useful: it tunes what recall ranks first."""
        async def run(c: AsyncEngramlog) -> dict[str, Any]:
            items = args["items"]
            used = [i.memory_id for i in items if i.verdict == "used"]
            not_useful = [i.memory_id for i in items if i.verdict == "not_useful"]
            return (await c.feedback(args["recall_id"], used=used, not_useful=not_useful)).model_dump(mode="json")
        return await call(ctx, run)

    @server.tool()
    @inputs({"memory_id": MEMORY, "min_position": WAIT}, memory_id=uuid.UUID, min_position=(MinPosition, None))
    async def history(ctx: Context, **args: Any) -> dict[str, Any]:
        """How a memory changed: the supersede chain (oldest → newest), with when, why and by whom."""
        async def run(c: AsyncEngramlog) -> dict[str, Any]:
            return (await c.history(args["memory_id"], args["min_position"])).model_dump(mode="json")
        return await call(ctx, run)

    @server.tool()
    @inputs({"session_id": "The conversation's id", "messages": "Messages, in order", "agent_id": AGENT,
             "project": PROJECT}, BatchIn, session_id=str, messages=list[ChatMessage])  # type: ignore[valid-type]  # a model made at run time
    async def sessions_append(ctx: Context, **args: Any) -> dict[str, Any]:
        """Append messages to a conversation's transcript, so it can be resumed later (resume_context)."""
        async def run(c: AsyncEngramlog) -> dict[str, Any]:
            messages = [m.model_dump(exclude_none=True) for m in args["messages"]]
            out = await c.append_messages(args["session_id"], messages, agent_id=args["agent_id"],
                                          project=args["project"])
            return out.model_dump(mode="json")
        return await call(ctx, run)

    @server.tool()
    @inputs({"session_id": "The conversation's id",
             "budget_tokens": "Token budget of the context (default: the service's)", "min_position": WAIT},
            session_id=str, budget_tokens=(BudgetTokens, None), min_position=(MinPosition, None))
    async def resume_context(ctx: Context, **args: Any) -> dict[str, Any]:
        """What to put in front of the model to resume a conversation: its recent messages and checkpoints
        within the budget, as text (`context`)."""
        async def run(c: AsyncEngramlog) -> dict[str, Any]:
            out = await c.resume_context(args["session_id"], args["budget_tokens"], args["min_position"])
            return {"session_id": out.session_id, "context": out.context, "tokens": out.tokens}
        return await call(ctx, run)

    return server


TOOL_NAMES = ("remember", "recall", "recall_multi", "deep_recall", "get_section", "supersede", "feedback",
              "history", "sessions_append", "resume_context")
__all__ = ["TOOL_NAMES", "ClientFor", "build_server"]
