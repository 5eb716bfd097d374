"""The SDK's retries never double a write: a write whose answer is lost (a 503 in its place, or the connection
broken after the server appended it) is sent again with the same idempotency key, and the server answers the
original. Real server (uvicorn on loopback), real stack; the fault is injected between client and server."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
import sdk_support
from engramlog_client import (
    AsyncEngramlog,
    Engramlog,
    EngramlogConnectionError,
    NotFoundError,
    Retry,
    UnavailableError,
)
from sqlalchemy import Engine, text

api_keys, tenant_key = sdk_support.api_keys, sdk_support.tenant_key
live_server, module_worker = sdk_support.live_server, sdk_support.module_worker
FAST = Retry(attempts=4, backoff_s=0.01)


def _lose(request: httpx.Request, response: httpx.Response, fault: str) -> httpx.Response:
    """The server has answered (and appended); the client never sees it."""
    if fault == "drop":
        raise httpx.ReadError("connection reset after the request was sent", request=request)
    return httpx.Response(503, json={"error": "service_unavailable", "detail": "injected: the answer was lost"},
                          request=request)


class LosesAnswers(httpx.BaseTransport):
    """Forwards every request to the real server; throws away the answers of the first writes (`faults`)."""

    def __init__(self, faults: list[str]) -> None:
        self.inner = httpx.HTTPTransport()
        self.faults = list(faults)
        self.sent: list[tuple[str, str, bytes]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        self.sent.append((request.method, request.url.path, request.read()))
        if request.method == "GET" or not self.faults:
            return response
        response.read()
        response.close()
        return _lose(request, response, self.faults.pop(0))


class AsyncLosesAnswers(httpx.AsyncBaseTransport):
    def __init__(self, faults: list[str]) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.faults = list(faults)
        self.sent: list[tuple[str, str, bytes]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        self.sent.append((request.method, request.url.path, await request.aread()))
        if request.method == "GET" or not self.faults:
            return response
        await response.aread()
        await response.aclose()
        return _lose(request, response, self.faults.pop(0))


def _logged(engine: Engine, tenant: str, stream_id: str, type_: str) -> list[tuple[int, dict]]:
    """(position, data) of each such event in the log, read from the table itself: every committed event
    (GET /v1/events pages only up to the gap-safe head)."""
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT position, data FROM events WHERE tenant = :t AND stream_id = :s AND "
                                 "type = :type ORDER BY position"), {"t": tenant, "s": stream_id, "type": type_})
        return [(r.position, r.data) for r in rows]


def test_lost_answers_to_writes_are_retried_once_each_written_once(live_server, tenant_key, tenant, engine,
                                                                    module_worker) -> None:
    def recorded(memory_id: object) -> list[dict]:
        return [data for _, data in _logged(engine, tenant, f"memory-{memory_id}", "MemoryRecorded")]

    net = LosesAnswers(["503", "drop"])
    with Engramlog(live_server.url, api_key=tenant_key, retry=FAST, transport=net) as sdk:
        written = sdk.remember("Gina's desk is on floor 7", agent_id="office", must_keep=True)
        assert [path for _, path, _ in net.sent] == ["/v1/memories"] * 3
        bodies = {json.loads(body)["idempotency_key"] for _, _, body in net.sent}
        assert len(bodies) == 1  # every attempt carried the same key
        assert len(recorded(written.memory_id)) == 1
        with engine.connect() as conn:  # nothing else was appended
            assert conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t AND type = 'MemoryRecorded'"),
                                {"t": tenant}).scalar() == 1
        assert sdk.last_position == written.position

        net.faults = ["drop"]
        many = sdk.remember_many([{"content": "Hal's desk is on floor 2", "must_keep": True},
                                  {"content": "Ida's desk is on floor 3", "must_keep": True}])
        assert [len(recorded(m.memory_id)) for m in many] == [1, 1]

        net.faults = ["drop", "503"]
        newer = sdk.supersede(written.memory_id, "Gina's desk is on floor 9", reason="she moved")
        assert newer.supersedes == written.memory_id  # the original answer, not "already superseded"
        assert [d["supersedes"] for d in recorded(newer.memory_id)] == [str(written.memory_id)]

        net.faults = ["503"]
        event_id = str(uuid.uuid4())
        positions = sdk.append([{"type": "MemoryRecorded", "stream_id": f"memory-{event_id}",
                                 "data": {"memory_id": event_id, "content": "Jo's desk is on floor 4",
                                          "must_keep": True}}])
        assert [p for p, _ in _logged(engine, tenant, f"memory-{event_id}", "MemoryRecorded")] == positions

        answer = sdk.recall("whose desk is on floor 9?", agent_id="office")
        assert answer.results[0].memory_id == newer.memory_id
        net.faults = ["drop"]
        given = sdk.feedback(answer.recall_id, used=[newer.memory_id])
        feedback = _logged(engine, tenant, f"recall-{answer.recall_id}", "RecallFeedbackGiven")
        assert [p for p, _ in feedback] == [given.position]


def test_without_retries_the_error_carries_the_status_and_reason(live_server, tenant_key) -> None:
    with Engramlog(live_server.url, api_key=tenant_key, retry=Retry(attempts=1),
                   transport=LosesAnswers(["503"])) as sdk, pytest.raises(UnavailableError) as lost:
        sdk.remember("Kim's desk is on floor 5", must_keep=True)
    assert lost.value.status == 503 and lost.value.detail == "injected: the answer was lost"

    nobody = f"http://127.0.0.1:{sdk_support.free_port()}"
    with Engramlog(nobody, retry=Retry(attempts=3, backoff_s=0.01)) as sdk, \
            pytest.raises(EngramlogConnectionError) as refused:
        sdk.recall("anything")
    assert refused.value.status == 0 and "after 3 attempt(s)" in str(refused.value)


async def _projected_section(sdk: AsyncEngramlog, path: str, heading_path: str):
    """The drill reads the knowledge read model: asked until the put is projected."""
    import asyncio

    for _ in range(240):
        try:
            return await sdk.get_section(path, heading_path)
        except NotFoundError:
            await asyncio.sleep(0.25)
    return await sdk.get_section(path, heading_path)


async def _async_flow(url: str, key: str) -> None:
    net = AsyncLosesAnswers(["drop", "503"])
    async with AsyncEngramlog(url, api_key=key, retry=FAST, transport=net) as sdk:
        written = await sdk.remember("Lena's bike is the red one", agent_id="garage", must_keep=True)
        assert len({json.loads(b)["idempotency_key"] for _, _, b in net.sent}) == 1 and len(net.sent) == 3
        answer = await sdk.recall("which bike is Lena's?", agent_id="garage")  # read-your-writes
        assert answer.results[0].memory_id == written.memory_id
        multi = await sdk.recall_multi("Lena bike", agent_id="garage", domains=["memories"])
        assert multi.buckets[0].results[0].memory_id == written.memory_id
        events = [e async for e in sdk.iter_events(stream_id=f"memory-{written.memory_id}")]
        assert [e.type for e in events][0] == "MemoryRecorded" and sum(
            e.type == "MemoryRecorded" for e in events) == 1
        put = await sdk.put_document("garage.md", "## Bikes\nThe red bike is Lena's.\n")
        assert put.changed
        drilled = await _projected_section(sdk, "garage.md", "Bikes")
        assert drilled.section.text.startswith("## Bikes")
        assert (await sdk.recall_record(answer.recall_id)).query == "which bike is Lena's?"
        assert (await sdk.history(written.memory_id)).current == written.memory_id
        assert await sdk.wait_recallable() is True


def test_async_client(live_server, tenant_key, module_worker) -> None:
    import asyncio

    asyncio.run(_async_flow(live_server.url, tenant_key))


def _count(engine: Engine, tenant: str, type_: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t AND type = :type"),
                            {"t": tenant, "type": type_}).scalar_one()


def test_lost_answers_to_domain_writes_are_retried_never_doubled(live_server, tenant_key, tenant, engine,
                                                                 module_worker) -> None:
    from conftest import wait_until

    net = LosesAnswers(["503", "drop"])
    with Engramlog(live_server.url, api_key=tenant_key, retry=FAST, transport=net) as sdk:
        put = sdk.put_transcript("t-retry", "[2026-02-01T09:00:00Z] USER: the otter plan\n")
        assert [p for _, p, _ in net.sent] == ["/v1/transcripts/t-retry"] * 3
        assert put.version == 1 and _count(engine, tenant, "TranscriptChunksPut") == 1  # one version, not three
        assert sdk.transcript("t-retry").version == 1

        net.faults = ["drop"]
        code = sdk.put_code_files("otter", [{"path": "otter/a.py", "content": "def swim():\n    return 1\n"}])
        assert [f.version for f in code.files] == [1]  # the retry found it put: the same version, nothing new
        assert _count(engine, tenant, "CodeFilePut") == 1

        # A message's id is chosen by the client before the first attempt: a retried append holds the same ids,
        # and a session ignores a message_id it already holds, so no message is doubled.
        net.faults = ["503", "drop"]
        done = sdk.append_messages("s-retry", [{"role": "user", "content": "is the otter plan on?"},
                                               {"role": "assistant", "content": "yes", "sent": False}])
        ids = {json.dumps(json.loads(body)["messages"]) for m, p, body in net.sent if p.endswith("/messages")}
        assert len(ids) == 1  # every attempt carried the same messages with the same ids
        assert wait_until(lambda: sdk.list_sessions().sessions, timeout=120)
        page = sdk.session_messages("s-retry", include_unsent=True)
        assert [m.message_id for m in page.messages] == done.message_ids
        assert [m.seq for m in page.messages] == [1, 2]

        net.faults = ["drop"]
        sent = sdk.mark_sent("s-retry", done.message_ids[1])
        assert sent.message_id == done.message_ids[1]  # the retry found it sent: changed False, nothing appended
        assert _count(engine, tenant, "SessionMessageSent") == 1

        net.faults = ["drop"]  # deep recall is not retried once it may have started (it costs model tokens)
        with pytest.raises(EngramlogConnectionError):
            sdk.deep_recall("what is the otter plan?")
