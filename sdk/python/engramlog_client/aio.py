"""The asynchronous client: the same methods as `Engramlog`, awaited; it only does the I/O of the exchanges
_base.py decides (retries, backoff, answers).

    from engramlog_client import AsyncEngramlog
    async with AsyncEngramlog("http://127.0.0.1:8000", api_key="...") as memory:
        await memory.remember("Alice moved to Lisbon", agent_id="assistant")
        hits = await memory.recall("where does Alice live?", agent_id="assistant")
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar, Unpack

import httpx

from engramlog_client import _calls as calls
from engramlog_client._aio_domains import AsyncDomainMethods
from engramlog_client._base import DEFAULT_URL, ClientBase, json_or_text
from engramlog_client._calls import Action, Call
from engramlog_client.models.events import Event, EventIn, EventsPage
from engramlog_client.models.memories import (
    History,
    Memory,
    MemoryFields,
    MemoryIn,
    Remembered,
    Superseded,
    SupersedeFields,
    SupersedeIn,
)
from engramlog_client.models.operations import (
    DeadLetterResolved,
    DeadLetters,
    Health,
    IngestDeadLetterResolved,
    IngestDeadLetters,
    ProjectionStatus,
    Rebuilt,
)
from engramlog_client.models.policy import PrivacyPolicy, PrivacyPolicyIn
from engramlog_client.models.recall import (
    FeedbackGiven,
    MultiFilters,
    MultiRecalled,
    MultiRecallIn,
    PositionState,
    Recalled,
    RecallFilters,
    RecallIn,
    RecallRecord,
)
from engramlog_client.retry import Retry

T = TypeVar("T")


class AsyncEngramlog(AsyncDomainMethods, ClientBase):
    """A client of one Engramlog API. `timeout` is seconds per attempt (or an httpx.Timeout); `retry` how 503s
    and connection errors are retried; `http_client` an httpx.AsyncClient to send through instead of one of its
    own (a shared pool: not closed by `close`)."""

    def __init__(self, base_url: str = DEFAULT_URL, api_key: str | None = None, *,
                 timeout: float | httpx.Timeout = 30.0, retry: Retry | None = None,
                 http_client: httpx.AsyncClient | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        super().__init__(api_key, retry)
        self._owns_http = http_client is None
        self.http = http_client or httpx.AsyncClient(base_url=base_url, timeout=timeout, transport=transport)

    async def __aenter__(self) -> AsyncEngramlog:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_http:
            await self.http.aclose()

    async def send(self, call: Call[T], consistent: bool = True) -> T:
        """Send one Call: the requests and waits its exchange asks for (same body, same idempotency key)."""
        exchange = self._exchange(call, consistent)
        step = next(exchange)
        while True:
            try:
                if isinstance(step, dict):
                    try:
                        outcome: httpx.Response | httpx.TransportError = await self.http.request(**step)
                    except httpx.TransportError as exc:
                        outcome = exc
                    step = exchange.send(outcome)
                else:
                    await asyncio.sleep(step)
                    step = next(exchange)
            except StopIteration as done:
                return done.value

    async def request(self, method: str, path: str, *, json: Any = None, params: Mapping[str, Any] | None = None,
                      content: str | bytes | None = None, headers: Mapping[str, str] | None = None) -> Any:
        """Any endpoint, answered as parsed JSON (text when the answer is not JSON): for a route this client has
        no typed method for. Retried, authenticated and refused as the typed methods are."""
        return await self.send(Call(method, path, json_or_text, json=json, params=dict(params) if params else None,
                                    content=content, headers=dict(headers or {})))

    # -------------------------------------------------------------------------------------------- memories

    async def remember(self, content: str, **fields: Unpack[MemoryFields]) -> Remembered:
        """Record one memory through the governor: `disposition` says whether it is active, staging or discarded;
        `must_keep=True` bypasses the salience gate, `supersedes=<id>` (with `reason`) corrects a memory."""
        return await self.send(calls.remember(MemoryIn(content=content, **fields)))  # type: ignore[arg-type]  # pydantic coerces the str/dict forms

    async def remember_many(self, memories: Sequence[MemoryIn | Mapping[str, Any]]) -> list[Remembered]:
        """Record up to 1,000 memories atomically; answers in order."""
        return (await self.send(calls.remember_many(memories))).memories

    async def memory(self, memory_id: uuid.UUID | str, as_of: int | datetime | None = None) -> Memory:
        """The memory now, or `as_of` a log position or aware timestamp: as it stood then."""
        return await self.send(calls.memory(memory_id, as_of))

    async def supersede(self, memory_id: uuid.UUID | str, content: str, reason: str,
                        **fields: Unpack[SupersedeFields]) -> Superseded:
        """Replace a memory (its scope, kind and tags are kept unless given). NotFoundError if unknown,
        ConflictError if it is already superseded (supersede its successor)."""
        body = SupersedeIn(content=content, reason=reason, **fields)  # type: ignore[arg-type]  # pydantic coerces the str/dict forms
        return await self.send(calls.supersede(memory_id, body))

    async def history(self, memory_id: uuid.UUID | str, min_position: int | None = None) -> History:
        """The supersede chain through a memory: current, chain (oldest → newest), transitions (when, why, who)."""
        return await self.send(calls.history(memory_id, min_position))

    # -------------------------------------------------------------------------------------------- the log

    async def append(self, events: Sequence[EventIn | Mapping[str, Any]],
                     idempotency_key: str | None = None) -> list[int]:
        """Append typed events atomically (producers append MemoryRecorded); answers their positions."""
        return (await self.send(calls.append(events, idempotency_key))).positions

    async def events(self, *, stream_id: str | None = None, type: Sequence[str] | str | None = None,
                     after: int | None = None, before: int | None = None, since: datetime | None = None,
                     until: datetime | None = None, cursor: str | None = None, limit: int | None = None) -> EventsPage:
        """One page of the log; pass `cursor=page.next_cursor` for the next."""
        return await self.send(calls.events(stream_id, type, after, before, since, until, cursor, limit))

    async def iter_events(self, **filters: Any) -> AsyncIterator[Event]:
        """Every event matching `filters` (those of `events`), page after page."""
        cursor = filters.pop("cursor", None)
        while True:
            page = await self.events(cursor=cursor, **filters)
            for event in page.events:
                yield event
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    # -------------------------------------------------------------------------------------------- recall

    async def recall(self, query: str, k: int | None = None, consistent: bool = True,
                     **filters: Unpack[RecallFilters]) -> Recalled:
        """Ranked memories for a query. Waits (server side, bounded) until this client's own writes are recallable
        unless `consistent=False`."""
        return await self.send(calls.recall(RecallIn(query=query, k=k, **filters)), consistent)

    async def recall_multi(self, query: str, domains: Sequence[str] | None = None, k: int | None = None,
                           consistent: bool = True, **filters: Unpack[MultiFilters]) -> MultiRecalled:
        """One query over several domains (memories, knowledge, transcripts, code, sessions): one bucket per
        domain in the order asked (default: every domain with data in the scope)."""
        body = MultiRecallIn(query=query, domains=list(domains) if domains is not None else None, k=k,
                             **filters)
        return await self.send(calls.recall_multi(body), consistent)

    async def recall_record(self, recall_id: uuid.UUID | str) -> RecallRecord:
        """What a recall answered and why (GET /v1/recalls/{id})."""
        return await self.send(calls.recall_record(recall_id))

    async def feedback(self, recall_id: uuid.UUID | str, used: Sequence[uuid.UUID | str] = (),
                       not_useful: Sequence[uuid.UUID | str] = ()) -> FeedbackGiven:
        """Say which memories of a recall were used or not useful (once per recall and memory)."""
        return await self.send(calls.feedback(recall_id, used, not_useful))

    async def position(self, position: int, wait: float = 0) -> PositionState:
        return await self.send(calls.position(position, wait))

    async def wait_recallable(self, position: int | None = None, timeout: float = 30.0) -> bool:
        """Wait until what was written up to `position` (default: this client's last write) is recallable."""
        target = self.last_position if position is None else position
        return True if not target else (await self.position(target, timeout)).recallable

    # -------------------------------------------------------------------------------------------- policy, operators

    async def set_privacy_policy(self, policy: PrivacyPolicyIn | None = None, **lists: list[str]) -> PrivacyPolicy:
        """Replace the tenant's privacy policy (operator keys): exclude_paths, _tags, _agents, _projects,
        _sessions."""
        return await self.send(calls.set_privacy_policy(policy or PrivacyPolicyIn(**lists)))

    async def privacy_policy(self) -> PrivacyPolicy:
        return await self.send(calls.privacy_policy())

    async def projections(self) -> list[ProjectionStatus]:
        return (await self.send(calls.projections())).projections

    async def health(self) -> Health:
        return await self.send(calls.health())

    async def metrics(self) -> str:
        """The Prometheus text (a tenant key: its own projection lag; an operator key: every counter)."""
        return await self.send(calls.metrics())

    async def rebuild(self, projection: str) -> Rebuilt:
        """Rebuild a projection from the log (operator keys)."""
        return await self.send(calls.rebuild(projection))

    async def dead_letters(self, projection: str | None = None, *, resolved: bool = False) -> DeadLetters:
        """Events projectors parked (operator keys); `resolved=True`: the retried and skipped ones too."""
        return await self.send(calls.dead_letters(projection, resolved))

    async def resolve_dead_letter(self, projection: str, position: int, action: Action) -> DeadLetterResolved:
        """`retry`: apply a parked event now; `skip`: close it unapplied (operator keys)."""
        return await self.send(calls.resolve_dead_letter(projection, position, action))

    async def ingest_dead_letters(self, *, resolved: bool = False) -> IngestDeadLetters:
        """Queued producer messages ingest could not append, with why (operator keys)."""
        return await self.send(calls.ingest_dead_letters(resolved))

    async def resolve_ingest_dead_letter(self, dead_letter_id: int, action: Action) -> IngestDeadLetterResolved:
        """`retry`: append the message now; `skip`: close it unappended (operator keys)."""
        return await self.send(calls.resolve_ingest_dead_letter(dead_letter_id, action))
