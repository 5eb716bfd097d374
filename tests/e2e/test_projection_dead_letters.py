"""One bad event never stops the projections: it is retried a bounded number of times, then parked so the
projector moves past it; the rest of its batch, other tenants and the other projectors go on; an operator lists,
retries or skips it (CLI and HTTP).

The mechanics are tested on a test-only projector (registered for the test) that refuses one marked event, so
the shared read models are never left with a parked event; the keyword projector is then shown parking a real
failure (a conflicting row) and applying it on retry once the cause is gone.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pytest
from sqlalchemy import Connection, text
from typer.testing import CliRunner

from domain.events import RecordedEvent
from domain.text import term_frequencies
from projections.dead_letters import MAX_EVENT_FAILURES
from projections.registry import PROJECTORS
from projections.runner import catch_up, load_checkpoint, status
from services.remember import MemoryInput, remember

META = {"actor": "test", "correlation_id": "dead-letters"}


class RefusingProjector:
    """Applies MemoryRecorded of one tenant into a scratch table, and fails on any whose content says POISON
    (after writing half of it: the savepoint must undo that)."""

    types = ("MemoryRecorded",)
    tables: tuple[str, ...] = ()

    def __init__(self, tenant: str) -> None:
        self.name = f"test_refusing_{tenant}"
        self.tenant = tenant
        self.poisoned = True

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        for e in events:
            if e.tenant != self.tenant:
                continue
            conn.execute(text("INSERT INTO test_refused_applied VALUES (:p, :pos)"), {"p": self.name,
                                                                                     "pos": e.position})
            if self.poisoned and "POISON" in e.data["content"]:
                raise ValueError(f"cannot apply {e.data['content']!r}")


@pytest.fixture
def refusing(engine, tenant, monkeypatch):
    projector = RefusingProjector(tenant)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE IF NOT EXISTS test_refused_applied (projection text, position bigint)"))
    monkeypatch.setitem(PROJECTORS, projector.name, projector)
    yield projector
    with engine.begin() as conn:
        for table in ("test_refused_applied", "projection_dead_letters"):
            conn.execute(text(f"DELETE FROM {table} WHERE projection = :p"), {"p": projector.name})
        conn.execute(text("DELETE FROM projection_checkpoints WHERE name = :p"), {"p": projector.name})


def applied(engine, projector) -> list[int]:
    with engine.connect() as conn:
        return list(conn.execute(text("SELECT position FROM test_refused_applied WHERE projection = :p "
                                      "ORDER BY position"), {"p": projector.name}).scalars())


def write(engine, tenant: str, *contents: str) -> list[int]:
    done = remember(engine, tenant, [MemoryInput(c, agent_id="a", must_keep=True) for c in contents], META)
    return [d.position for d in done]


def test_a_bad_event_is_parked_after_bounded_failures_and_the_projector_moves_past(engine, tenant, refusing):
    good_before, poison, good_after = write(engine, tenant, "the kiln is hot", "POISON pill", "the glaze is blue")
    other_tenant = f"{tenant}-other"
    [other] = write(engine, other_tenant, "another tenant's memory")

    # Each attempt stops just before the bad event and counts one failure; its batch's earlier events are kept.
    # At the last allowed failure it is parked, and the projector goes on past it.
    for _ in range(MAX_EVENT_FAILURES):
        with engine.connect() as conn:
            if status(conn, refusing, tenant).parked:
                break
            assert load_checkpoint(conn, refusing.name).position < poison
        catch_up(engine, refusing, 500)
        if applied(engine, refusing) != [good_before, good_after]:
            assert applied(engine, refusing) == [good_before]
            with engine.connect() as conn:
                assert (status(conn, refusing, tenant).parked, status(conn, refusing, tenant).failing) == (0, 1)
    assert applied(engine, refusing) == [good_before, good_after]
    with engine.connect() as conn:
        assert load_checkpoint(conn, refusing.name).position >= other
        assert (status(conn, refusing, tenant).parked, status(conn, refusing, other_tenant).parked) == (1, 0)
        row = conn.execute(text("SELECT tenant, attempts, status, error FROM projection_dead_letters "
                                "WHERE projection = :p AND position = :pos"),
                           {"p": refusing.name, "pos": poison}).one()
    assert (row.tenant, row.attempts, row.status) == (tenant, MAX_EVENT_FAILURES, "parked")
    assert "ValueError" in row.error and "POISON" in row.error

    # The operator sees it, and a retry that fails again leaves it parked with the new error.
    runner = CliRunner()
    from cli.main import app

    listed = runner.invoke(app, ["projections", "dead-letters", "--projection", refusing.name])
    assert listed.exit_code == 0, listed.output
    assert str(poison) in listed.output and "parked" in listed.output
    again = runner.invoke(app, ["projections", "dead-letters", "retry", str(poison), "--projection", refusing.name])
    assert again.exit_code == 1 and "failed" in again.output, again.output

    # Once the cause is gone, the retry applies it (out of order: the operator's explicit choice).
    refusing.poisoned = False
    done = runner.invoke(app, ["projections", "dead-letters", "retry", "--all", "--projection", refusing.name])
    assert done.exit_code == 0 and "retried" in done.output, done.output
    assert applied(engine, refusing) == [good_before, poison, good_after]
    with engine.connect() as conn:
        assert status(conn, refusing, tenant).parked == 0


@pytest.fixture
def operator(app, client, tenant, monkeypatch):
    """Beside `client` (a tenant key): a client with an operator key."""
    from fastapi.testclient import TestClient

    import api.context
    from infra.settings import replace

    settings = api.context.get_settings()
    settings = replace(settings, api_keys={**settings.api.api_keys, "ops-key": "ops"}, operator_keys=("ops-key",))
    monkeypatch.setattr(api.context, "get_settings", lambda: settings)
    with TestClient(app, headers={"Authorization": "Bearer ops-key"}) as c:
        yield c


def test_skip_over_http_and_operator_only(engine, tenant, refusing, operator, client):
    http = operator
    [poison] = write(engine, tenant, "POISON again")
    for _ in range(MAX_EVENT_FAILURES):
        catch_up(engine, refusing, 500)
    r = http.get("/v1/projections/dead-letters", params={"projection": refusing.name})
    assert r.status_code == 200, r.text
    listed = r.json()["dead_letters"]
    assert [(d["position"], d["status"]) for d in listed] == [(poison, "parked")]
    # A tenant key is no operator.
    assert client.get("/v1/projections/dead-letters").status_code == 403
    assert client.post(f"/v1/projections/{refusing.name}/dead-letters/{poison}/skip").status_code == 403

    r = http.post(f"/v1/projections/{refusing.name}/dead-letters/{poison}/skip")
    assert r.status_code == 200 and r.json()["outcome"] == "skipped", r.text
    assert http.post(f"/v1/projections/{refusing.name}/dead-letters/{poison}/retry").status_code == 404
    assert http.get("/v1/projections/dead-letters",
                    params={"projection": refusing.name}).json()["dead_letters"] == []
    assert applied(engine, refusing) == []  # skipped: never applied


def test_the_keyword_projector_parks_a_failing_event_and_the_others_go_on(engine, tenant):
    from workers.actors import catch_up_all

    memory_id = uuid.uuid4()
    # A row already in the way (as a corrupted read model would have): keyword's INSERT of the doc fails.
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO keyword_docs (tenant, memory_id, length, kind) VALUES (:t, :m, 1, 'x')"),
                     {"t": tenant, "m": memory_id})
    [blocked] = [d.position for d in remember(engine, tenant, [MemoryInput(
        "Lisbon trams are yellow", memory_id=memory_id, must_keep=True)], META)]
    [after] = write(engine, tenant, "Porto has a bridge")
    for _ in range(MAX_EVENT_FAILURES):
        catch_up_all()
    with engine.connect() as conn:
        memories = set(conn.execute(text("SELECT position FROM memories WHERE tenant = :t"), {"t": tenant}).scalars())
        docs = conn.execute(text("SELECT count(*) FROM keyword_docs WHERE tenant = :t"), {"t": tenant}).scalar_one()
        assert memories == {blocked, after}  # the memories projector was never held up
        assert docs == 2  # the blocker and the later memory: keyword moved past the parked event
        assert status(conn, PROJECTORS["keyword"], tenant).parked == 1

    with engine.begin() as conn:
        conn.execute(text("DELETE FROM keyword_docs WHERE tenant = :t AND memory_id = :m"),
                     {"t": tenant, "m": memory_id})
    from projections.dead_letters import retry

    assert retry(engine, PROJECTORS["keyword"], blocked, "test").outcome == "retried"
    with engine.connect() as conn:
        lengths = dict(conn.execute(text("SELECT memory_id, length FROM keyword_docs WHERE tenant = :t"),
                                    {"t": tenant}).all())
        assert lengths[memory_id] == sum(term_frequencies("Lisbon trams are yellow").values())
        assert status(conn, PROJECTORS["keyword"], tenant).parked == 0
