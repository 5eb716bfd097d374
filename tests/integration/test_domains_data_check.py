"""The aggregator asks every domain whether the scope holds its data in one statement (recall/domains/base.py
data_check and held), and each answer is what the domain's own has_data says."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import event, text


def test_every_domain_is_asked_in_one_statement_and_answers_as_it_does_alone(engine, tenant) -> None:
    from recall.domains.base import held
    from recall.domains.registry import DOMAINS
    from recall.scope import Scope

    now = datetime.now(UTC)
    with engine.begin() as conn:
        conn.execute(text("""
            INSERT INTO memories (tenant, memory_id, content, content_hash, kind, agent_id, occurred_at, recorded_at,
                                  status, position)
            VALUES (:t, :id, 'a memory', 'h', 'observation', 'a', :now, :now, 'active', 1)"""),
            {"t": tenant, "id": uuid.uuid4(), "now": now})
    statements: list[str] = []

    def capture(conn, cursor, statement, params, context, many) -> None:
        statements.append(statement)

    try:
        for scope, memories in ((Scope(tenant), True), (Scope(tenant, agent_id="b"), False)):
            statements.clear()
            event.listen(engine, "before_cursor_execute", capture)
            try:
                with engine.connect() as conn:
                    found = held(conn, {name: d.data_check(scope) for name, d in DOMAINS.items()})
            finally:
                event.remove(engine, "before_cursor_execute", capture)
            assert len(statements) == 1
            assert found == {"memories": memories, "knowledge": False, "sessions": False, "transcripts": False,
                             "code": False}
            with engine.connect() as conn:
                assert found == {name: d.has_data(conn, scope) for name, d in DOMAINS.items()}
    finally:
        with engine.begin() as conn:
            conn.execute(text("DELETE FROM memories WHERE tenant = :t"), {"t": tenant})
