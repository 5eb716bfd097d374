"""The postings packed per term are kept for every BM25 domain, not memories alone: session messages appended over
HTTP are packed as migration 0035 packs their postings, and the sessions' keyword leg scored from the packed rows
answers what reading every posting answers."""

from __future__ import annotations

import random

from fastapi.testclient import TestClient
from sqlalchemy import text

from domain.text import tokenize
from projections.runner import catch_up
from projections.sessions import SessionsProjector

WORDS = ["deploy", "payments", "rollback", "invoice", "latency", "cache", "retry", "queue", "index", "billing"]


def test_session_messages_are_packed_and_scored_from_the_packed_rows(client: TestClient, engine, tenant: str,
                                                                     monkeypatch) -> None:
    from infra.settings import get_settings
    from readmodels.item_domains import MESSAGES
    from readmodels.term_blocks import packed_from_postings
    from recall import keyword
    from recall.domains.sessions import SESSION_KEYWORD
    from recall.keyword import bm25_top
    from recall.scope import Scope

    rng = random.Random(5)
    for s in range(4):
        messages = [{"role": "user", "content": " ".join(rng.choices(WORDS, k=rng.randint(3, 12)))}
                    for _ in range(15)]
        assert client.post(f"/v1/sessions/s{s}/messages", json={"messages": messages}).status_code == 201
    catch_up(engine, SessionsProjector(), 1000, max_seconds=120)
    names = MESSAGES.postings
    with engine.connect() as conn:
        live = conn.execute(text(f"SELECT term, bucket, postings FROM {names.blocks} WHERE tenant = :t"
                                 " ORDER BY term, bucket"), {"t": tenant}).all()
        packed_sql = packed_from_postings(names, "WHERE p.tenant = :t")
        packed = conn.execute(text(f"SELECT term, bucket, postings FROM ({packed_sql})"
                                   " x(tenant, term, bucket, postings) ORDER BY term, bucket"), {"t": tenant}).all()
        assert live == packed and len(live) == len(WORDS)
        s = get_settings()
        for query in ("deploy payments", "cache retry queue index", "billing"):
            monkeypatch.setattr(keyword, "PACKED_OVER", -1)
            from_blocks = bm25_top(conn, Scope(tenant), tokenize(query), 12, s.keyword.bm25_k1, s.keyword.bm25_b,
                                   tables=SESSION_KEYWORD)
            monkeypatch.setattr(keyword, "PACKED_OVER", 10**9)
            every = bm25_top(conn, Scope(tenant), tokenize(query), 12, s.keyword.bm25_k1, s.keyword.bm25_b,
                             tables=SESSION_KEYWORD)
            assert list(from_blocks) == list(every) and len(every) == 12
