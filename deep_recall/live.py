"""The live, read-only APIs the sandbox calls (external functions), bound to one caller: its tenant, the deep
recall's scope, the privacy policy read once for the request. Each call is recorded for the audit (arguments and
a capped result); each payload is capped; a refused or failed call raises in the sandbox with a clear message.
Each call is waited for at most until the deep recall's hard deadline (deep_recall/deadline.py).

search() goes through recall/multi (and so the privacy gate; each search is a recall of its own, with its own
hit-log event, RecallServed, whose results count as references as any recall's; its recall id is in the call's
audit record and in `search_recall_ids`, and its event's metadata names the deep recall as causation_id);
list_sessions() and load_transcript() read the sessions read models through
recall/domains/sessions.py, which filter by tenant and policy (an excluded or another tenant's session is unknown).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from deep_recall import capacity
from deep_recall.deadline import HardTimeout, call_within, left_s
from domain.errors import InvalidPayload
from domain.privacy import PrivacyPolicy
from domain.sessions.messages import message_text
from infra.embedding import Embedder
from infra.settings import Settings
from recall.domains.sessions import list_sessions, session_messages
from recall.multi import MultiRequest, recall_multi
from recall.scope import Scope
from recall.service import MAX_K

AUDIT_RESULT_CHARS = 2000  # what the audit keeps of each live call's result
RESULT_CONTENT_CHARS = 4000  # one search result's content


def plain(value: Any) -> Any:
    """A value the sandbox can hold: JSON's types only (times as ISO strings, ids as strings)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str))


def cap(value: Any, limit: int) -> Any:
    """The value cut to about `limit` characters of JSON: a string's tail, a list's last items (with a marker)."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        return value[:limit] + f"\n[... {len(value) - limit} more characters cut: payload cap {limit}]"
    if isinstance(value, list) and size(value) > limit:
        kept, used = [], 2
        for item in value:
            used += size(item) + 2
            if used > limit:
                break
            kept.append(item)
        return [*kept, {"truncated": f"{len(value) - len(kept)} more items cut: payload cap {limit} characters"}]
    return value


def short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= AUDIT_RESULT_CHARS else text[:AUDIT_RESULT_CHARS] + "…"


@dataclass
class Caller:
    """Who the live APIs answer: the tenant, the deep recall's scope (None: any), the policy, event metadata."""

    tenant: str
    agent_id: str | None
    project: str | None
    session_id: str | None
    policy: PrivacyPolicy
    metadata: dict[str, Any]


@dataclass
class LiveAPIs:
    engine: Engine
    embedder: Embedder
    settings: Settings
    caller: Caller
    deadline: float  # time.monotonic() of the hard timeout
    calls: list[dict[str, Any]] = field(default_factory=list)  # the current iteration's, for the audit
    search_recall_ids: list[str] = field(default_factory=list)  # every search's recall id, in order

    # -- guards ---------------------------------------------------------------------------------------------
    def check_time(self) -> None:
        if left_s(self.deadline) <= 0:
            raise HardTimeout("the deep recall's hard timeout has passed: no more live calls; call FINAL now")

    def _narrowed(self, name: str, asked: str | None, fixed: str | None) -> str | None:
        """A scope column the model asks for: only within the deep recall's scope, never an excluded one."""
        if asked is None:
            return fixed
        if not isinstance(asked, str):
            raise TypeError(f"{name} must be a string")
        if fixed is not None and asked != fixed:
            raise PermissionError(f"{name}={asked!r} is outside this deep recall's scope ({name}={fixed!r})")
        if self.caller.policy.excludes(**{name: asked}):
            raise PermissionError(f"{name}={asked!r} is excluded by the tenant's privacy policy")
        return asked

    def _recorded(self, fn: str, args: dict[str, Any], call: Callable[[dict[str, Any]], Any]) -> Any:
        """Run a live call within the deadline and record it; `call` may add fields to its record (a search's
        recall id)."""
        self.check_time()
        started = time.perf_counter()
        record: dict[str, Any] = {"fn": fn, "args": plain(args)}
        try:
            result = cap(plain(call_within(self.deadline, lambda: call(record), f"{fn}()")),
                         self.settings.deep.deep_live_chars)
        except Exception as exc:
            self.calls.append({**record, "error": f"{type(exc).__name__}: {exc}"[:500],
                               "ms": round((time.perf_counter() - started) * 1000, 2)})
            raise
        self.calls.append({**record, "result": short(result), "ms": round((time.perf_counter() - started) * 1000, 2)})
        return result

    # -- the APIs -------------------------------------------------------------------------------------------
    def search(self, query: str, max_results: int = 10, domains: list[str] | None = None,
               agent_id: str | None = None, project: str | None = None, **other: Any) -> list[dict[str, Any]]:
        """Hybrid recall over every domain with data in the scope (recall/multi), its fused list: by relevance."""
        if "tenant" in other:
            raise PermissionError("search() always answers the caller's own tenant; 'tenant' is not an argument")
        if other:
            raise TypeError(f"search() got unexpected arguments: {', '.join(sorted(other))}")
        if not isinstance(query, str) or not query.strip():
            raise ValueError("search() needs a non-empty query string")
        if not isinstance(max_results, int) or not 1 <= max_results <= MAX_K:
            raise ValueError(f"max_results must be an integer between 1 and {MAX_K}")
        scope = Scope(self.caller.tenant, self._narrowed("agent_id", agent_id, self.caller.agent_id),
                      self._narrowed("project", project, self.caller.project))

        def run(record: dict[str, Any]) -> list[dict[str, Any]]:
            try:
                with capacity.searching(self.settings, self.deadline):  # deep recall's searches take turns
                    answer = recall_multi(self.engine, self.embedder, self.settings,
                                          MultiRequest(scope, query, tuple(domains or ()), max_results),
                                          self.caller.metadata, self.caller.policy)
            except InvalidPayload as exc:
                raise ValueError(str(exc)) from None
            self.search_recall_ids.append(str(answer.recall_id))
            record["recall_id"] = str(answer.recall_id)  # its RecallServed: GET /v1/recalls/{recall_id}
            hits = [{"domain": f.domain, "relevance": round(f.hit.relevance, 4), "score": round(f.hit.score, 4),
                     "content": cap(f.hit.content, RESULT_CONTENT_CHARS), "memory_id": f.hit.memory_id,
                     "handle": f.hit.handle, "fields": f.hit.fields} for f in answer.results]
            return hits[:max_results]

        return self._recorded("search", {"query": query, "max_results": max_results, "domains": domains,
                                         "agent_id": agent_id, "project": project}, run)

    def list_sessions(self) -> list[dict[str, Any]]:
        """The scope's sessions, newest first, with message counts and date ranges."""
        def run(_: dict[str, Any]) -> list[dict[str, Any]]:
            with self.engine.connect() as conn:
                rows = list_sessions(conn, self.caller.tenant, self.caller.policy, self.caller.agent_id,
                                     self.caller.project, limit=200)[0]
            return rows

        return self._recorded("list_sessions", {}, run)

    def transcript(self, session_id: str) -> str:
        """A session's sent messages as `[timestamp] ROLE: text` lines (capped at the live payload cap)."""
        if not isinstance(session_id, str):
            raise TypeError("session_id must be a string")
        lines: list[str] = []
        used, after = 0, 0
        with self.engine.connect() as conn:
            while used <= self.settings.deep.deep_live_chars:
                page = session_messages(conn, self.caller.tenant, session_id, self.caller.policy, after, 500)
                if page is None:
                    raise LookupError(f"no session {session_id!r} in this scope")
                messages, next_after = page
                for m in messages:
                    line = f"[{plain(m['created_at'])}] {m['role'].upper()}: {message_text(m['content'])}"
                    lines.append(line)
                    used += len(line) + 1
                if next_after is None:
                    break
                after = next_after
        return "\n".join(lines)

    def load_transcript(self, session_id: str) -> str:
        return self._recorded("load_transcript", {"session_id": session_id}, lambda _: self._in_scope(session_id))

    def _in_scope(self, session_id: str) -> str:
        if not isinstance(session_id, str):
            raise TypeError("session_id must be a string")
        listed = {s["session_id"] for s in self.list_sessions_raw()}
        if session_id not in listed:
            raise LookupError(f"no session {session_id!r} in this scope")
        return self.transcript(session_id)

    def list_sessions_raw(self) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            rows, _ = list_sessions(conn, self.caller.tenant, self.caller.policy, self.caller.agent_id,
                                    self.caller.project, limit=1000)
        return rows


__all__ = ["Caller", "LiveAPIs", "cap", "plain", "short", "size"]
