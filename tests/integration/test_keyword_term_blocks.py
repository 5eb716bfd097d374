"""Memories' postings packed per term (keyword_term_blocks): the projector's rows are the postings packed as
migration 0035 packs them, however the log is cut into batches, through terms split into more buckets and joined
again; and the keyword leg that scores them answers what reading every posting answers."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from keyword_support import keyword_events, projected_in_batches
from lifecycle_support import record, reinforced, sync
from sqlalchemy import Connection, text

from domain.privacy import PrivacyPolicy
from domain.text import tokenize

VOCAB = ["tea", "river", "alice", "bakery", "friday", "deploy", "porto", "cat", "ramen", "lisbon"]


def _contents(rng: random.Random, n: int) -> list[str]:
    """Texts of common words (every term past a small block's size) and a word of each text's own."""
    return [" ".join(rng.sample(VOCAB, rng.randint(2, 6)) + [f"w{i}x"] * rng.randint(1, 3)) for i in range(n)]


def _blocks(conn: Connection) -> tuple[list[tuple], list[tuple]]:
    """The blocks the projector kept, and those the migration's SQL packs from the postings beside them."""
    from readmodels.memories import MEMORY_POSTINGS
    from readmodels.term_blocks import packed_from_postings

    kept = [tuple(r) for r in conn.execute(text(
        "SELECT tenant, term, bucket, postings FROM keyword_term_blocks ORDER BY term, bucket"))]
    packed = [tuple(r) for r in conn.execute(text(
        f"SELECT * FROM ({packed_from_postings(MEMORY_POSTINGS)}) x ORDER BY 2, 3"))]
    return kept, packed


def test_blocks_are_the_postings_packed_however_batches_are_cut(engine, tenant, monkeypatch) -> None:
    from readmodels import term_blocks

    monkeypatch.setattr(term_blocks, "BLOCK", 2)  # terms of 30 postings split into 16 buckets, then join again
    rng = random.Random(7)
    ids = record(engine, tenant, _contents(rng, 30))
    for memory_id in ids[:20]:  # the common words dropped from most: their buckets join
        reinforced(engine, tenant, memory_id, f"only {rng.choice(['porto', 'ramen'])} now")
    reinforced(engine, tenant, ids[25], "")  # every term gone
    events = keyword_events(engine, tenant)
    results = {size: projected_in_batches(engine, events, size, _blocks) for size in (1, 4, len(events))}
    kept, packed = results[1]
    assert kept == packed
    assert {term for _, term, _, _ in kept} >= {"porto", "ramen", "tea"}
    assert max(bucket for _, _, bucket, _ in kept) >= 4  # split past one bucket
    assert all(result == results[1] for result in results.values())


def test_live_blocks_are_rebuilt_the_same(engine, tenant) -> None:
    from readmodels.memories import MEMORY_POSTINGS
    from readmodels.term_blocks import packed_from_postings

    rng = random.Random(11)
    ids = record(engine, tenant, _contents(rng, 12))
    reinforced(engine, tenant, ids[0], "tea river porto")
    sync(engine)
    with engine.connect() as conn:
        live = conn.execute(text("SELECT term, bucket, postings FROM keyword_term_blocks WHERE tenant = :t"
                                 " ORDER BY term, bucket"), {"t": tenant}).all()
        packed_sql = packed_from_postings(MEMORY_POSTINGS, "WHERE p.tenant = :t")
        packed = conn.execute(text(f"SELECT term, bucket, postings FROM ({packed_sql})"
                                   " x(tenant, term, bucket, postings) ORDER BY term, bucket"), {"t": tenant}).all()
    assert live == packed and live
    kept, _ = projected_in_batches(engine, keyword_events(engine, tenant), 5, _blocks)
    assert [(term, bucket, postings) for _, term, bucket, postings in kept] == [tuple(r) for r in live]


QUERIES = ["tea river", "alice bakery friday", "deploy cat w3x", "porto lisbon ramen tea", "nothing here"]


@pytest.mark.parametrize("query", QUERIES)
def test_packed_leg_answers_what_every_posting_does(engine, tenant, monkeypatch, query) -> None:
    from infra.settings import get_settings
    from recall import keyword
    from recall.keyword import bm25_top
    from recall.scope import Scope

    rng = random.Random(3)
    record(engine, tenant, _contents(rng, 40), agent_id="a1")
    record(engine, tenant, _contents(rng, 30), agent_id="a2", kind="episode")
    record(engine, tenant, _contents(rng, 10), disposition="staging", agent_id="a2")
    sync(engine)
    s = get_settings()
    k1, b = s.keyword.bm25_k1, s.keyword.memory_bm25_b
    cases: list[dict[str, Any]] = [
        {"scope": Scope(tenant), "n": 10},
        {"scope": Scope(tenant), "n": 200, "statuses": ("active",)},
        {"scope": Scope(tenant, policy=PrivacyPolicy(exclude_agents=("a1",))), "n": 5, "statuses": ("active",)},
        {"scope": Scope(tenant), "n": 8, "where_sql": "d.kind = 'episode'"},
        # few pass among the best scored: the packed leg gives way to the read of every posting
        {"scope": Scope(tenant), "n": 8, "where_sql": "d.agent_id = 'a2' AND d.kind = 'fact'"},
        # an agent's documents: only theirs scored
        {"scope": Scope(tenant, agent_id="a1"), "n": 10, "packed": True},
        {"scope": Scope(tenant, agent_id="a2"), "n": 6, "statuses": ("active",), "packed": True},
        {"scope": Scope(tenant, agent_id="a2", kinds=("episode",)), "n": 50, "packed": True},
        {"scope": Scope(tenant, agent_id="nobody"), "n": 5, "packed": True},
        # more documents than narrow_max: not scored from the packed postings
        {"scope": Scope(tenant, agent_id="a1"), "n": 10, "narrow_max": 5, "packed": False},
    ]
    answered: list[bool] = []  # whether the packed read answered (not given way to the SQL plan)
    packed_read = keyword.bm25_top_packed
    monkeypatch.setattr(keyword, "bm25_top_packed", lambda *a, **kw: answered.append(
        (found := packed_read(*a, **kw)) is not None) or found)
    with engine.connect() as conn:
        for case in cases:
            answered.clear()
            kwargs = {"statuses": case.get("statuses"), "where_sql": case.get("where_sql", ""),
                      "narrow_max": case.get("narrow_max", keyword.NARROW_SCOPE_MAX)}
            monkeypatch.setattr(keyword, "PACKED_OVER", -1)
            packed = bm25_top(conn, case["scope"], tokenize(query), case["n"], k1, b, **kwargs)
            monkeypatch.setattr(keyword, "PACKED_OVER", 10**9)
            every = bm25_top(conn, case["scope"], tokenize(query), case["n"], k1, b, **kwargs)
            assert list(packed) == list(every), case
            assert list(packed.values()) == pytest.approx(list(every.values()), rel=1e-12), case
            if "packed" in case:
                assert answered == ([True] if case["packed"] else []), case


def test_packed_leg_answers_what_every_posting_does_in_a_time_frame(engine, tenant, monkeypatch) -> None:
    """Under since / until and as_of the filters are the frame's (the memories as they stood, in the valid-time
    range), looked up in the frame's tables: the same answer as reading every posting."""
    from infra.settings import get_settings
    from recall import keyword
    from recall.funnel.candidates import memory_tables
    from recall.keyword import bm25_top
    from recall.scope import Scope
    from recall.timeframe import TimeFrame, resolve_as_of
    from services.remember import MemoryInput, remember

    def remembered(contents: list[str], at: datetime | None) -> list[Any]:
        return remember(engine, tenant, [MemoryInput(content=c, must_keep=True, occurred_at=at) for c in contents],
                        {"source": "test", "actor": "test"})

    rng = random.Random(17)
    last_year = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
    old = remembered(_contents(rng, 25), last_year)
    recent = remembered(_contents(rng, 25), None)
    as_of = resolve_as_of(engine, tenant, max(d.position for d in recent))
    for done in old[:8]:  # after the position: other words, or gone
        reinforced(engine, tenant, done.memory_id, "porto ramen only now")
    for done in recent[:5]:
        reinforced(engine, tenant, done.memory_id, "")
    sync(engine)
    s = get_settings()
    k1, b = s.keyword.bm25_k1, s.keyword.memory_bm25_b
    served: list[bool] = []  # whether the packed read answered (not given way to the SQL plan)
    packed_read = keyword.bm25_top_packed
    monkeypatch.setattr(keyword, "bm25_top_packed", lambda *a, **kw: served.append(
        (found := packed_read(*a, **kw)) is not None) or found)
    middle = last_year + timedelta(days=30)
    frames = [TimeFrame(until=middle), TimeFrame(since=middle), TimeFrame(as_of=as_of),
              TimeFrame(as_of=as_of, until=middle)]
    answered = 0
    with engine.connect() as conn:
        for frame, query in ((f, q) for f in frames for q in QUERIES[:4]):
            tables, _ = memory_tables(frame)
            kwargs = {"statuses": ("active",), "tables": tables, "where_params": frame.params()}
            monkeypatch.setattr(keyword, "PACKED_OVER", -1)
            packed = bm25_top(conn, Scope(tenant), tokenize(query), 10, k1, b, **kwargs)
            monkeypatch.setattr(keyword, "PACKED_OVER", 10**9)
            every = bm25_top(conn, Scope(tenant), tokenize(query), 10, k1, b, **kwargs)
            assert list(packed) == list(every), (frame, query)
            assert list(packed.values()) == pytest.approx(list(every.values()), rel=1e-12), (frame, query)
            answered += bool(every)
    assert answered >= 12 and sum(served) >= 12


def test_packed_leg_answers_past_the_walk_up_to_its_bound(engine, tenant, monkeypatch) -> None:
    """Past walk_over and up to PACKED_UP_TO the packed read answers, exactly (what reading every posting
    answers); past PACKED_UP_TO the walk does."""
    from infra.settings import get_settings
    from recall import keyword
    from recall.keyword import bm25_top
    from recall.scope import Scope

    rng = random.Random(23)
    record(engine, tenant, _contents(rng, 80))
    sync(engine)
    s = get_settings()
    k1, b = s.keyword.bm25_k1, s.keyword.memory_bm25_b
    packed_reads: list[object] = []
    packed_read = keyword.bm25_top_packed
    monkeypatch.setattr(keyword, "bm25_top_packed", lambda *a, **kw: packed_reads.append(a) or packed_read(*a, **kw))
    with engine.connect() as conn:
        def top(query: str, walk_over: int) -> dict:
            return bm25_top(conn, Scope(tenant), tokenize(query), 12, k1, b, ("active",), walk_over=walk_over)

        for query in QUERIES[:4]:
            monkeypatch.setattr(keyword, "PACKED_OVER", 10**9)
            exact = top(query, 10**9)  # every posting read
            monkeypatch.setattr(keyword, "PACKED_OVER", -1)
            packed = top(query, 5)  # past walk_over: the walk's place
            assert list(packed) == list(exact) and exact, query
            assert list(packed.values()) == pytest.approx(list(exact.values()), rel=1e-12), query
        assert len(packed_reads) == 4
        monkeypatch.setattr(keyword, "PACKED_UP_TO", 5)
        top(QUERIES[0], 5)
        assert len(packed_reads) == 4  # past PACKED_UP_TO: walked


def test_packed_leg_says_when_too_few_pass(engine, tenant) -> None:
    from readmodels.memories import MEMORY_POSTINGS
    from recall.packed_bm25 import bm25_top_packed

    rng = random.Random(5)
    record(engine, tenant, _contents(rng, 60))
    [rare] = record(engine, tenant, ["tea w999x"], kind="rare")
    sync(engine)
    with engine.connect() as conn:
        def top(n: int, width: int) -> dict | None:
            return bm25_top_packed(conn, MEMORY_POSTINGS, tenant, ["tea", "w999x"], n, width, 1.2, 0.75, "memories",
                                   "d.tenant = :tenant AND d.kind = 'rare'", {"tenant": tenant})
        assert top(2, 5) is None  # one of the best five passes, more were scored: not proved
        assert list(top(1, 5) or {}) == [rare]
        assert list(top(2, 100) or {}) == [rare]  # every scored document looked at
