"""The SDK's operator methods against the real stack through a real uvicorn server on loopback: metrics, rebuild,
the projections' dead letters (listed, a retry that fails again, a retry that applies, resolved ones listed) and
ingest's (a parked message appended on retry, another skipped); refused with 403 for a tenant key.

Parked events come from a test-only projector registered for the test, so the shared read models never hold one
(as tests/e2e/test_projection_dead_letters.py does)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence

import pytest
import sdk_support
from engramlog_client import AsyncEngramlog, AuthError, Engramlog, NotFoundError
from engramlog_client.models import DeadLetter, IngestDeadLetter
from sqlalchemy import Connection

from domain.events import RecordedEvent
from projections.dead_letters import MAX_EVENT_FAILURES
from projections.registry import PROJECTORS
from projections.runner import catch_up
from services.remember import MemoryInput, remember

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database

api_keys, tenant_key = sdk_support.api_keys, sdk_support.tenant_key
live_server, module_worker = sdk_support.live_server, sdk_support.module_worker
META = {"actor": "test", "correlation_id": "sdk-operators"}


class RefusingProjector:
    """Applies nothing; fails on a MemoryRecorded of its tenant whose content says POISON while `poisoned`."""

    types = ("MemoryRecorded",)
    tables: tuple[str, ...] = ()

    def __init__(self, tenant: str) -> None:
        self.name = f"test_sdk_refusing_{tenant}"
        self.tenant = tenant
        self.poisoned = True

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        for e in events:
            if e.tenant == self.tenant and self.poisoned and "POISON" in e.data["content"]:
                raise ValueError(f"cannot apply {e.data['content']!r}")


@pytest.fixture
def operator_key(api_keys, monkeypatch):
    """An operator key (ENGRAMLOG_OPERATOR_KEYS) beside the module's tenant keys, for this test."""
    import api.context
    from infra.settings import replace

    key = f"ops-{uuid.uuid4().hex[:8]}"
    api_keys[key] = "ops"
    settings = replace(api.context.get_settings(), operator_keys=(key,))  # the same api_keys dict
    monkeypatch.setattr(api.context, "get_settings", lambda: settings)
    return key


@pytest.fixture
def refusing(engine, tenant, monkeypatch):
    from sqlalchemy import text

    projector = RefusingProjector(tenant)
    monkeypatch.setitem(PROJECTORS, projector.name, projector)
    yield projector
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM projection_dead_letters WHERE projection = :p"), {"p": projector.name})
        conn.execute(text("DELETE FROM projection_checkpoints WHERE name = :p"), {"p": projector.name})


def test_projection_dead_letters_rebuild_metrics(live_server, operator_key, tenant_key, engine, tenant,
                                                 refusing) -> None:
    [poison] = [d.position for d in remember(engine, tenant, [MemoryInput("POISON pill", must_keep=True)], META)]
    for _ in range(MAX_EVENT_FAILURES):
        catch_up(engine, refusing, 500)
    with Engramlog(live_server.url, api_key=operator_key, timeout=60) as ops:
        listed = ops.dead_letters(refusing.name)
        assert [(d.position, d.status, d.tenant) for d in listed.dead_letters] == [(poison, "parked", tenant)]
        letter = listed.dead_letters[0]
        assert isinstance(letter, DeadLetter) and letter.attempts == MAX_EVENT_FAILURES
        assert letter.event_type == "MemoryRecorded" and "POISON" in letter.error
        failed = ops.resolve_dead_letter(refusing.name, poison, "retry")
        assert failed.outcome == "failed" and failed.error and "POISON" in failed.error
        refusing.poisoned = False
        assert ops.resolve_dead_letter(refusing.name, poison, "retry").outcome == "retried"
        with pytest.raises(NotFoundError):
            ops.resolve_dead_letter(refusing.name, poison, "skip")  # not parked any more
        assert ops.dead_letters(refusing.name).dead_letters == []
        resolved = ops.dead_letters(refusing.name, resolved=True).dead_letters
        assert [(d.position, d.status) for d in resolved] == [(poison, "retried")] and resolved[0].resolved_by
        with pytest.raises(ValueError):
            ops.resolve_dead_letter(refusing.name, poison, "apply")  # type: ignore[arg-type]

        parked = _parked(engine, tenant, "Oona's locker is 3")
        assert parked in [d.id for d in ops.ingest_dead_letters().dead_letters]
        assert ops.resolve_ingest_dead_letter(parked, "skip").outcome == "skipped"

        rebuilt = ops.rebuild("privacy")
        assert rebuilt.projection == "privacy" and rebuilt.rebuilt_to_position >= 0
        assert "engramlog_projection_lag_events" in ops.metrics()

    with Engramlog(live_server.url, api_key=tenant_key, timeout=60) as sdk:
        assert 'engramlog_projection_lag_events{projection="memories"}' in sdk.metrics()  # its own lag
        for refused in (lambda: sdk.dead_letters(), lambda: sdk.rebuild("privacy"),
                        lambda: sdk.ingest_dead_letters()):
            with pytest.raises(AuthError) as no:
                refused()
            assert no.value.status == 403 and "operator" in no.value.detail


def _parked(engine, tenant: str, content: str) -> int:
    """A queued message parked as ingest parks one it could not append (here: appendable now)."""
    from workers.ingest_dead_letters import park

    memory_id = str(uuid.uuid4())
    events = [{"type": "MemoryRecorded", "stream_id": f"memory-{memory_id}", "idempotency_key": f"k-{memory_id}",
               "data": {"memory_id": memory_id, "content": content, "must_keep": True}}]
    parked = park(engine, tenant, events, META, "the database was down", "OperationalError")
    assert parked is not None
    return parked


async def _ingest_flow(url: str, key: str, engine, tenant: str) -> None:
    first, second = _parked(engine, tenant, "Nia's locker is 12"), _parked(engine, tenant, "Nia's locker is 14")
    async with AsyncEngramlog(url, api_key=key, timeout=60) as ops:
        mine = [d for d in (await ops.ingest_dead_letters()).dead_letters if d.tenant == tenant]
        assert [(d.id, d.status, d.reason) for d in mine] == [(first, "parked", "the database was down"),
                                                              (second, "parked", "the database was down")]
        assert isinstance(mine[0], IngestDeadLetter) and "Nia's locker is 12" in mine[0].message
        retried = await ops.resolve_ingest_dead_letter(first, "retry")
        assert retried.outcome == "retried" and retried.positions and len(retried.positions) == 1
        assert ops.last_position == retried.positions[0]
        assert (await ops.resolve_ingest_dead_letter(second, "skip")).outcome == "skipped"
        with pytest.raises(NotFoundError):
            await ops.resolve_ingest_dead_letter(first, "retry")
        assert not [d for d in (await ops.ingest_dead_letters()).dead_letters if d.tenant == tenant]
        done = {d.id: d.status for d in (await ops.ingest_dead_letters(resolved=True)).dead_letters}
        assert (done[first], done[second]) == ("retried", "skipped")
        assert isinstance((await ops.dead_letters()).dead_letters, list) and "# HELP" in await ops.metrics()


def test_ingest_dead_letters_async(live_server, operator_key, engine, tenant) -> None:
    asyncio.run(_ingest_flow(live_server.url, operator_key, engine, tenant))
