"""Session messages, transcript chunks and code symbols decay by reference like memories and knowledge sections, by
the one decay sweep with a pinned clock (workers/reference_decay.py): unreferenced for 30 days dormant (still
recalled), for 90 archived (recalled only with history, ×0.1); referenced again (a recall returned it) active
again, and a second sweep with the same clock appends nothing; each decision a status-changed event by the
scheduler with its inputs; another tenant's units are untouched; a rebuild of each projection gives the same rows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from lifecycle_support import sync, verify_tenant
from sqlalchemy import Engine, text

from domain.privacy import NO_POLICY
from infra.embedding import get_embedder
from infra.settings import get_settings
from recall.domains.base import DomainQuery
from recall.domains.registry import DOMAINS
from recall.multi import MultiRequest, recall_multi
from recall.scope import Scope
from services.code import FileInput, write_files
from services.sessions import append_messages
from services.transcripts import put_transcript

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database

META = {"actor": "test", "source": "test"}


def _write_session(engine: Engine, tenant: str) -> None:
    append_messages(engine, tenant, "s1", [
        {"message_id": "alpha", "role": "user", "content": "the alpha zebra crossing"},
        {"message_id": "bravo", "role": "assistant", "content": "the bravo giraffe pen"}], META)


def _turns(word: str, n: int) -> str:
    return "".join(f"[2026-01-01T10:00:{i:02d}Z] {'USER' if i % 2 == 0 else 'ASSISTANT'}: {word} note {i}\n"
                   for i in range(n))


def _write_transcript(engine: Engine, tenant: str) -> None:
    put_transcript(engine, tenant, "t1", _turns("zebra", 8) + _turns("giraffe", 8), META)  # two chunks of 8 turns


def _write_code(engine: Engine, tenant: str) -> None:
    source = "def zebra_crossing():\n    return 1\n\n\ndef giraffe_pen():\n    return 2\n"
    write_files(engine, tenant, "zoo", [FileInput("zoo/animals.py", source)], META)


@dataclass(frozen=True)
class Case:
    domain: str  # the recall domain and the projection
    unit: str  # the sweep report's key
    event: str
    write: Callable[[Engine, str], None]
    statuses_sql: str  # (name, status) of the tenant's units; "zebra" is one, "giraffe" the other


CASES = [
    Case("sessions", "messages", "SessionMessageStatusChanged", _write_session,
         "SELECT CASE message_id WHEN 'alpha' THEN 'zebra' ELSE 'giraffe' END, status FROM session_messages"
         " WHERE tenant = :t"),
    Case("transcripts", "chunks", "TranscriptChunkStatusChanged", _write_transcript,
         "SELECT CASE ord WHEN 0 THEN 'zebra' ELSE 'giraffe' END, status FROM transcript_chunks WHERE tenant = :t"),
    Case("code", "symbols", "CodeSymbolStatusChanged", _write_code,
         r"SELECT regexp_replace(qualified_name, '^.*\.|_.*$', '', 'g'), status FROM code_symbols WHERE tenant = :t"
         " AND status NOT IN ('replaced', 'removed')"),  # a re-put file's dropped symbols are kept, not held
]


def _statuses(engine: Engine, case: Case, tenant: str) -> dict[str, str]:
    with engine.connect() as conn:
        return dict(conn.execute(text(case.statuses_sql), {"t": tenant}).all())


def _recall(engine: Engine, case: Case, tenant: str, query: str) -> list[dict[str, Any]]:
    """A recall through recall/multi (its RecallServed is the reference); the handles it answered."""
    settings = get_settings()
    answer = recall_multi(engine, get_embedder(settings.embedding.embedding_model), settings,
                          MultiRequest(Scope(tenant), query, (case.domain,), 2), META)
    return [hit.handle for bucket in answer.buckets for hit in bucket.results]


def _found(engine: Engine, case: Case, tenant: str, query: str, history: bool = False) -> list[tuple[float, str]]:
    """What the domain answers (read only: no hit-log), as (score, status)."""
    hits = DOMAINS[case.domain].search(engine, DomainQuery(Scope(tenant), query, 5, datetime.now(UTC), NO_POLICY,
                                                           include_history=history)).results
    return [(h.score, h.fields["status"]) for h in hits]


def _sweep(engine: Engine, clock: datetime, tenant: str) -> dict[str, Any]:
    from workers.lifecycle import decay_sweep

    return decay_sweep(engine, clock, tenant).as_dict()


def _now(engine: Engine) -> datetime:
    with engine.connect() as conn:
        return conn.execute(text("SELECT now()")).scalar_one()


@pytest.mark.parametrize("case", CASES, ids=[c.domain for c in CASES])
def test_unreferenced_units_decay_and_a_referenced_one_comes_back_and_stays(engine, tenant, case) -> None:
    case.write(engine, tenant)
    sync(engine)
    t0 = _now(engine)
    assert _statuses(engine, case, tenant) == {"zebra": "active", "giraffe": "active"}

    report = _sweep(engine, t0 + timedelta(days=40), tenant)
    assert report[case.unit] == {"domain": case.domain, "examined": 2, "transitions": 2,
                                 "by_transition": {"active → dormant": 2}}
    assert _statuses(engine, case, tenant) == {"zebra": "dormant", "giraffe": "dormant"}
    assert _sweep(engine, t0 + timedelta(days=40), tenant)[case.unit]["transitions"] == 0
    assert [s for _, s in _found(engine, case, tenant, "zebra")] == ["dormant"]  # dormant: still recalled

    [handle] = _recall(engine, case, tenant, "giraffe")  # a reference: the hit-log's RecallServed
    sync(engine)
    report = _sweep(engine, t0 + timedelta(days=40), tenant)
    assert report[case.unit]["by_transition"] == {"dormant → active": 1}
    assert _statuses(engine, case, tenant) == {"zebra": "dormant", "giraffe": "active"}
    # The reactivation counts as a reference: the same clock again moves nothing, 20 days on neither.
    assert _sweep(engine, t0 + timedelta(days=40), tenant)[case.unit]["transitions"] == 0
    assert _sweep(engine, t0 + timedelta(days=60), tenant)[case.unit]["transitions"] == 0
    assert _statuses(engine, case, tenant) == {"zebra": "dormant", "giraffe": "active"}

    report = _sweep(engine, t0 + timedelta(days=100), tenant)
    assert report[case.unit]["by_transition"] == {"active → dormant": 1, "dormant → archived": 1}
    assert _statuses(engine, case, tenant) == {"zebra": "archived", "giraffe": "dormant"}
    assert _found(engine, case, tenant, "zebra") == []  # archived: only with history, ×0.1
    [(score, status)] = _found(engine, case, tenant, "zebra", history=True)
    assert status == "archived" and score <= 0.1

    with engine.connect() as conn:
        decided = conn.execute(text("SELECT data, metadata->>'actor' AS actor FROM events WHERE tenant = :t"
                                    " AND type = :type ORDER BY position"), {"t": tenant, "type": case.event}).all()
    assert len(decided) == 5 and {d.actor for d in decided} == {"system:scheduler"}  # 2 + 1 + 2
    last = decided[-1].data
    assert {"ref_count", "idle_days", "last_referenced_at", "threshold_days"} <= set(last["inputs"])
    assert last["clock"].startswith((t0 + timedelta(days=100)).date().isoformat())
    assert all(n == 0 for n in verify_tenant(engine, case.domain, tenant).values())  # a rebuild: the same rows


@pytest.mark.parametrize("case", CASES, ids=[c.domain for c in CASES])
def test_a_sweep_and_references_stay_within_their_tenant(engine, tenant, case) -> None:
    other = f"{tenant}-other"
    case.write(engine, tenant)
    case.write(engine, other)
    sync(engine)
    t0 = _now(engine)
    _sweep(engine, t0 + timedelta(days=40), tenant)
    _sweep(engine, t0 + timedelta(days=40), other)
    _recall(engine, case, other, "giraffe")  # the same handle, in the other tenant
    sync(engine)

    report = _sweep(engine, t0 + timedelta(days=100), tenant)
    assert report[case.unit]["by_transition"] == {"dormant → archived": 2}
    assert _statuses(engine, case, tenant) == {"zebra": "archived", "giraffe": "archived"}
    assert _statuses(engine, case, other) == {"zebra": "dormant", "giraffe": "dormant"}  # not swept yet
    assert _sweep(engine, t0 + timedelta(days=40), other)[case.unit]["by_transition"] == {"dormant → active": 1}
    assert _statuses(engine, case, other) == {"zebra": "dormant", "giraffe": "active"}


def test_a_session_message_counts_from_when_it_was_sent_not_its_created_at(engine, tenant) -> None:
    from domain.privacy import NO_POLICY as POLICY
    from services.sessions import mark_sent

    append_messages(engine, tenant, "old", [
        {"message_id": "m1", "role": "user", "content": "imported long ago", "created_at": "2020-01-01T00:00:00Z"},
        {"message_id": "m2", "role": "user", "content": "pending", "sent": False}], META)
    sync(engine)
    t0 = _now(engine)
    assert _sweep(engine, t0 + timedelta(days=10), tenant)["messages"]["transitions"] == 0  # 2020 does not count
    mark_sent(engine, tenant, "old", "m2", META, POLICY)
    sync(engine)
    report = _sweep(engine, _now(engine) + timedelta(days=40), tenant)
    assert report["messages"] == {"domain": "sessions", "examined": 2, "transitions": 2,
                                  "by_transition": {"active → dormant": 2}}
    assert all(n == 0 for n in verify_tenant(engine, "sessions", tenant).values())


def test_a_code_symbol_keeps_its_status_and_age_across_a_new_version_of_its_file(engine, tenant) -> None:
    def created() -> dict[str, datetime]:
        with engine.connect() as conn:
            return dict(conn.execute(text("SELECT name, created_at FROM code_symbols WHERE tenant = :t"
                                          " AND status NOT IN ('replaced', 'removed')"), {"t": tenant}).all())

    _write_code(engine, tenant)
    sync(engine)
    first = created()
    _sweep(engine, _now(engine) + timedelta(days=40), tenant)
    changed = "def zebra_crossing():\n    return 10\n\n\ndef giraffe_pen():\n    return 2\n\n\ndef okapi():\n    pass\n"
    write_files(engine, tenant, "zoo", [FileInput("zoo/animals.py", changed)], META)
    sync(engine)
    assert _statuses(engine, CASES[2], tenant) == {"zebra": "dormant", "giraffe": "dormant", "okapi": "active"}
    now = created()
    assert {k: now[k] for k in first} == first and now["okapi"] > max(first.values())
    assert all(n == 0 for n in verify_tenant(engine, "code", tenant).values())
