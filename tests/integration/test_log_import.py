"""The log is portable: a tenant's mixed corpus (memories with a supersede and feedback, a session, a knowledge
document, recalls), exported with `engramlog export` (jsonl and parquet) and restored with `engramlog import log`
into a second, empty database on the same server, gives the same events (ids, streams, versions, times, actors,
opened payloads), the same read models row for row (each projection's `verify` on the new store, and each table
against the source store's, a log position compared as the event it names), the same answers from every recall
domain, and content sealed under the new store's own keys. A second import is refused; with --resume it appends
nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from funnel_support import ask, project, remember_all
from sqlalchemy import Engine, text
from typer.testing import CliRunner

from cli.main import app
from tests.log_support import empty_store, opened_events

META = {"actor": "test", "source": "test"}
QUERIES = ["Lisbon trams", "the heron deploy", "how do I rotate the keys", "bridge over the Douro"]


@pytest.fixture
def second_store(engine):
    with empty_store(engine) as target:
        yield target


def _corpus(engine: Engine, tenant: str) -> None:
    from services.feedback import give_feedback
    from services.knowledge import DocumentInput, put_document
    from services.remember import MemoryInput, remember
    from services.sessions import append_messages

    done = remember_all(engine, tenant, ["Lisbon trams are yellow and climb steep hills",
                                         "Porto has a double-deck iron bridge over the Douro"])
    remember(engine, tenant, [MemoryInput("Porto's bridge over the Douro is the Dom Luis I bridge", must_keep=True,
                                          supersedes=done[1].memory_id)], META)
    append_messages(engine, tenant, "heron", [
        {"message_id": "q-1", "role": "user", "content": "is the heron deploy done?"},
        {"message_id": "a-1", "role": "assistant", "content": "the heron deploy is rolling out"}], META)
    put_document(engine, tenant, DocumentInput("ops/keys.md", "# Keys\n\n## Rotation\n\nRotate the keys every "
                                               "ninety days with the vault CLI.\n\n## Storage\n\nKeys live in the "
                                               "vault, never in the repository.\n"), META)
    served = ask(engine, tenant, "Lisbon trams")
    give_feedback(engine, tenant, served.recall_id,
                  [{"memory_id": str(served.results[0].memory_id), "verdict": "used"}], META)
    with engine.connect() as conn:
        head = conn.execute(text("SELECT max(position) FROM events WHERE tenant = :t"), {"t": tenant}).scalar_one()
    project(engine, head)


def _log(engine: Engine, tenant: str) -> list[tuple]:
    with engine.connect() as conn:
        events = opened_events(conn, "tenant = :t", {"t": tenant})
    return [(e.event_id, e.stream_id, e.stream_version, e.type, e.schema_version, e.data, e.metadata,
             e.occurred_at, e.recorded_at) for e in sorted(events, key=lambda e: e.position)]


POSITIONS = {"position", "valid_from", "valid_to"}  # columns holding a log position (and any *_position)


def _positions(engine: Engine, tenant: str) -> dict[int, str]:
    with engine.connect() as conn:
        return dict(conn.execute(text("SELECT position, event_id::text FROM events WHERE tenant = :t"),
                                 {"t": tenant}).all())


def _table(engine: Engine, table: str, tenant: str) -> list[str]:
    """The tenant's rows of a read model, sorted, each log position named by its event's id (each store numbers
    its own log)."""
    by_position = _positions(engine, tenant)
    with engine.connect() as conn:
        cols = [c for c, in conn.execute(text(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = :t"
            " ORDER BY ordinal_position"), {"t": table})]
        where = "WHERE tenant = :tenant" if "tenant" in cols else ""
        rows = conn.execute(text(f"SELECT {', '.join(cols)} FROM {table} {where}"), {"tenant": tenant}).all()
    at = [i for i, c in enumerate(cols) if c in POSITIONS or c.endswith("_position")]
    named = [tuple(by_position.get(v, v) if i in at else v for i, v in enumerate(r)) for r in rows]
    return sorted(repr(r) for r in named)


def _answers(engine: Engine, tenant: str) -> list[tuple]:
    """Every domain's answer to each query, read-only, at one fixed clock."""
    from domain.privacy import NO_POLICY
    from infra.embedding import get_embedder
    from infra.settings import get_settings
    from recall.domains.base import DomainQuery
    from recall.domains.registry import DOMAINS
    from recall.scope import Scope

    now = datetime(2030, 1, 1, tzinfo=UTC)
    embedder = get_embedder(get_settings().embedding.embedding_model)
    out = []
    for query in QUERIES:
        q = DomainQuery(Scope(tenant), query, 5, now, NO_POLICY, embedder.query_vector(tenant, query))
        for name, domain in DOMAINS.items():
            answer = domain.search(engine, q)
            out.append((query, name, answer.reason, [(h.handle, round(h.score, 9), round(h.relevance, 9))
                                                     for h in answer.results]))
    return out


def test_an_export_restored_into_an_empty_store_replays_the_same(engine, tenant, second_store, tmp_path,
                                                                 monkeypatch):
    from projections.rebuild import verify
    from projections.registry import PROJECTORS

    _corpus(engine, tenant)
    runner = CliRunner()
    lines, table = tmp_path / "log.jsonl", tmp_path / "log.parquet"
    for fmt, out in (("jsonl", lines), ("parquet", table)):
        done = runner.invoke(app, ["export", "--format", fmt, "--output", str(out), "--tenant", tenant])
        assert done.exit_code == 0, done.output

    monkeypatch.setattr("cli.calls.engine", lambda: second_store)
    done = runner.invoke(app, ["import", "log", str(table)])
    assert done.exit_code == 0, done.output
    source_log = _log(engine, tenant)
    assert f"imported {len(source_log)} events" in done.output
    assert _log(second_store, tenant) == source_log  # ids, streams, versions, payloads, actors, times

    # sealed again, under the new store's keys
    with engine.connect() as a, second_store.connect() as b:
        keys = "SELECT key_id FROM subject_keys WHERE tenant = :t"
        assert set(b.execute(text(keys), {"t": tenant}).scalars()).isdisjoint(a.execute(text(keys), {"t": tenant})
                                                                                 .scalars())
        sealed = "SELECT count(*) FROM events WHERE tenant = :t AND data ? '_sealed'"
        assert b.execute(text(sealed), {"t": tenant}).scalar_one() == a.execute(text(sealed), {"t": tenant}) \
            .scalar_one() > 0

    # a second import is refused, and a resumed one appends nothing
    again = runner.invoke(app, ["import", "log", str(lines)])
    assert again.exit_code == 2 and "already holds events" in again.output
    resumed = runner.invoke(app, ["import", "log", str(lines), "--resume"])
    assert resumed.exit_code == 0 and f"imported 0 events, {len(source_log)} already held" in resumed.output

    with second_store.connect() as conn:
        head = conn.execute(text("SELECT max(position) FROM events")).scalar_one()
    project(second_store, head)
    filled = set()
    for projector in PROJECTORS.values():
        report = verify(second_store, projector)
        assert report.identical, (projector.name, [t.samples for t in report.tables])
        for t in projector.tables:
            rows = _table(second_store, t, tenant)
            assert rows == _table(engine, t, tenant), t
            filled |= {t} if rows else set()
    assert {"memories", "memory_history", "memory_activity", "memory_vectors", "session_messages",
            "knowledge_sections", "recall_hits"} <= filled
    answers = _answers(second_store, tenant)
    assert answers == _answers(engine, tenant)
    assert {name for _, name, _, hits in answers if hits} >= {"memories", "knowledge", "sessions"}


def test_an_export_that_does_not_continue_the_streams_is_refused(engine, tenant, second_store, tmp_path,
                                                                  monkeypatch):
    remember_all(engine, tenant, ["Faro has a marina"])
    only = tmp_path / "admitted.jsonl"
    runner = CliRunner()
    assert runner.invoke(app, ["export", "--output", str(only), "--tenant", tenant, "--type",
                               "MemoryAdmitted"]).exit_code == 0
    monkeypatch.setattr("cli.calls.engine", lambda: second_store)
    done = runner.invoke(app, ["import", "log", str(only)])
    assert done.exit_code == 2 and "whole, unfiltered export" in " ".join(done.output.split())
    with second_store.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM events")).scalar_one() == 0


def test_a_cut_export_writes_nothing_whatever_its_batches(engine, tenant, second_store, tmp_path, monkeypatch):
    """The CLI checks the whole file before its first batch: an export with one event cut from its middle is
    refused with nothing written, though with one-event batches the events before the cut would fit batches."""
    remember_all(engine, tenant, ["Tavira has a bridge", "Olhão has a market"])
    whole = tmp_path / "whole.jsonl"
    runner = CliRunner()
    assert runner.invoke(app, ["export", "--output", str(whole), "--tenant", tenant]).exit_code == 0
    lines = whole.read_text(encoding="utf-8").splitlines()
    streams = [json.loads(line)["stream_id"] for line in lines]
    at = next(i for i in range(1, len(lines)) if streams[i] in streams[i + 1:])  # not the first, not a stream's last
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:at] + lines[at + 1:]) + "\n", encoding="utf-8")
    monkeypatch.setattr("services.import_log.BATCH", 1)
    monkeypatch.setattr("cli.calls.engine", lambda: second_store)
    done = runner.invoke(app, ["import", "log", str(cut)])
    assert done.exit_code == 2 and "whole, unfiltered export" in " ".join(done.output.split()), done.output
    with second_store.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM events")).scalar_one() == 0
