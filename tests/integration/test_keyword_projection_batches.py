"""The keyword read model (BM25 postings, docs, terms, stats) is the same however the log is cut into batches,
after a rebuild, and as BM25 computed from the memories' final texts; a content change re-indexes its memory
through an index led by (tenant, memory_id), not a scan of the tenant's postings.

The projector is applied here to this tenant's events alone, into scratch copies of its tables
(tests/keyword_support.py)."""

from __future__ import annotations

import math
import uuid
from collections import Counter
from typing import Any

import pytest
from keyword_support import keyword_events, projected_in_batches
from lifecycle_support import TEST_ACTOR, reinforced, sync
from sqlalchemy import text

from domain.events import NewEvent, memory_stream, validate_payload
from domain.text import term_frequencies
from eventstore.append import append

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database

CONTENTS = [
    "Alice moved to Lisbon in May and works at a bakery near the river",
    "Bob's favourite food is ramen; he eats ramen every Friday with Alice",
    "The deploy failed because the migration ran twice on the replica",
    "我喜欢在北京吃烤鸭",
    "Carol prefers tea over coffee, and green tea over black tea",
    "The quarterly review moved from Tuesday to Thursday afternoon",
    "ok",
    "Dave's cat Biscuit is afraid of the vacuum cleaner near the river",
    "Alice and Bob deploy the bakery website every Friday",
    "tea tea tea",
]
TABLES = {"keyword_docs": "memory_id", "keyword_postings": "term, memory_id", "keyword_terms": "term",
          "keyword_stats": "tenant", "keyword_term_blocks": "term, bucket"}


def _write_log(engine: Any, tenant: str) -> tuple[list[uuid.UUID], dict[uuid.UUID, str]]:
    """Recorded memories, then content changes: a reinforcement in the same append as its recording (one batch
    then holds both), later ones that add, drop and keep terms, and a merge. Answers ids and final texts."""
    ids = [uuid.uuid4() for _ in CONTENTS]
    final = dict(zip(ids, CONTENTS, strict=True))

    def recorded(i: int) -> NewEvent:
        return NewEvent("MemoryRecorded", memory_stream(ids[i]), validate_payload("MemoryRecorded", {
            "memory_id": str(ids[i]), "content": CONTENTS[i], "kind": "fact", "agent_id": f"ag{i % 2}"}),
            expected_version=0)

    def reinforcement(i: int, content: str) -> NewEvent:
        final[ids[i]] = content
        return NewEvent("MemoryReinforced", memory_stream(ids[i]), validate_payload("MemoryReinforced", {
            "memory_id": str(ids[i]), "observation_id": str(uuid.uuid4()), "similarity": 0.95,
            "merged_content": content, "confidence": 0.6}), metadata={"actor": "system:governor", "source": "test"})

    with engine.begin() as conn:
        append(conn, tenant, [recorded(i) for i in range(5)] + [reinforcement(1, CONTENTS[1] + " and sushi")]
               + [recorded(i) for i in range(5, len(CONTENTS))], TEST_ACTOR)
    reinforced(engine, tenant, ids[0], "Alice moved to Porto in June")  # terms dropped and added
    final[ids[0]] = "Alice moved to Porto in June"
    reinforced(engine, tenant, ids[9], "tea tea tea")  # unchanged: nothing to re-index
    reinforced(engine, tenant, ids[6], "")  # every term gone
    final[ids[6]] = ""
    merged = "Carol prefers green tea; Dave's cat Biscuit likes tea too"
    with engine.begin() as conn:
        append(conn, tenant, [NewEvent("MemoriesMerged", memory_stream(ids[4]), validate_payload("MemoriesMerged", {
            "memory_id": str(ids[4]), "merged_ids": [str(ids[7])], "similarity": 0.9, "merged_content": merged,
            "clock": "2026-01-01T00:00:00Z"}), metadata={"actor": "system:consolidation", "source": "test"})],
               TEST_ACTOR)
    final[ids[4]] = merged
    return ids, final


def _rows(conn: Any, tenant: str) -> dict[str, list[tuple[Any, ...]]]:
    return {table: [tuple(r) for r in conn.execute(
        text(f"SELECT * FROM {table} WHERE tenant = :t ORDER BY {order}"), {"t": tenant})]
        for table, order in TABLES.items()}


def _expected_bm25(final: dict[uuid.UUID, str], terms: list[str], k1: float, b: float) -> dict[uuid.UUID, float]:
    """Okapi BM25 straight from the memories' final texts, as recall/keyword.py defines it."""
    docs = {m: term_frequencies(c) for m, c in final.items()}
    lengths = {m: sum(tf.values()) for m, tf in docs.items()}
    avgdl = sum(lengths.values()) / len(docs)
    scores: dict[uuid.UUID, float] = {}
    for term in set(terms):
        df = sum(1 for tf in docs.values() if term in tf)
        if not df:
            continue
        idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
        for m, tf in docs.items():
            if term in tf:
                f = tf[term]
                scores[m] = scores.get(m, 0.0) + idf * f * (k1 + 1) / (f + k1 * (1 - b + b * lengths[m] / avgdl))
    return scores


@pytest.fixture
def logged(engine, tenant):
    ids, final = _write_log(engine, tenant)
    sync(engine)  # every projection caught up, batch as configured
    return ids, final


def test_same_rows_however_batches_are_cut_live_and_rebuilt(engine, tenant, logged) -> None:
    from projections.keyword import KeywordProjector
    from projections.rebuild import rebuild, verify

    _, final = logged
    events = keyword_events(engine, tenant)
    by_batch = {size: projected_in_batches(engine, events, size, lambda conn: _rows(conn, tenant))
                for size in (1, 2, 3, 5, 7, len(events))}
    with engine.connect() as conn:
        live = _rows(conn, tenant)
    for size, rows in by_batch.items():
        assert rows == live, size

    # The rows are those of the final texts: one doc each, postings = term frequencies, df = docs holding a term.
    tfs = {m: term_frequencies(c) for m, c in final.items()}
    assert {(r[1], r[2]) for r in live["keyword_docs"]} == {(m, sum(tf.values())) for m, tf in tfs.items()}
    assert {(r[1], r[2], r[3]) for r in live["keyword_postings"]} == {
        (term, m, f) for m, tf in tfs.items() for term, f in tf.items()}
    assert {(r[1], r[2]) for r in live["keyword_terms"]} == set(
        Counter(term for tf in tfs.values() for term in tf).items())
    assert live["keyword_stats"] == [(tenant, len(final), sum(sum(tf.values()) for tf in tfs.values()))]

    rebuild(engine, KeywordProjector(), batch_size=3)
    with engine.connect() as conn:
        assert _rows(conn, tenant) == live
    assert verify(engine, KeywordProjector(), batch_size=4).identical


def test_bm25_scores_are_those_of_the_final_texts(engine, tenant, logged) -> None:
    from infra.settings import get_settings
    from recall.keyword import bm25_top
    from recall.scope import Scope

    _, final = logged
    settings = get_settings()
    terms = sorted(term_frequencies("tea river Alice bakery Friday deploy Porto sushi 北京 cat"))
    with engine.connect() as conn:
        scores = bm25_top(conn, Scope(tenant=tenant), terms, 50, settings.keyword.bm25_k1, settings.keyword.bm25_b)
    expected = _expected_bm25(final, terms, settings.keyword.bm25_k1, settings.keyword.bm25_b)
    assert scores.keys() == expected.keys()
    for memory_id, score in expected.items():
        assert scores[memory_id] == pytest.approx(score, rel=1e-9)


def _index_columns(conn: Any, plan: Any) -> list[list[str]]:
    """The key columns of each index a JSON plan scans."""
    found: list[list[str]] = []

    def walk(node: dict[str, Any]) -> None:
        if "Index Name" in node:
            found.append(list(conn.execute(text("""
                SELECT a.attname FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
                JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                WHERE i.indexrelid = CAST(:name AS regclass) ORDER BY k.n"""), {"name": node["Index Name"]}).scalars()))
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0]["Plan"])
    return found


def test_postings_are_found_by_memory_and_by_term_through_an_index(engine, tenant, logged) -> None:
    """A re-indexed memory's old postings are read and deleted through an index led by (tenant, memory_id), and
    recall's postings of a term through one led by (tenant, term). With the primary key (tenant, term, memory_id)
    alone, the by-memory lookups were a skip scan: one descent per distinct term of the tenant."""
    from projections import keyword

    ids, _ = logged
    with engine.connect() as conn:
        conn.execute(text("SET LOCAL enable_seqscan = off"))  # a few rows here: a sequential scan would be as good
        conn.execute(text("SET LOCAL enable_bitmapscan = off"))  # so the plan names the index it walks
        for statement, params in ((keyword._OLD_POSTINGS, {"memory_id": ids[1]}),
                                  (keyword.MEMORY_POSTINGS.delete_postings, {"ids": [ids[1]]})):
            plan = conn.execute(text(f"EXPLAIN (FORMAT JSON) {statement.text}"),
                                {"tenant": tenant, **params}).scalar_one()
            [walked] = _index_columns(conn, plan)  # one index scan, no sequential or bitmap one
            assert walked[0] == "tenant" and "memory_id" in walked, plan
        # Both lookups have their index: by memory (tenant, memory_id), by term (tenant, term). Which one the
        # planner walks for this tenant's handful of rows depends on the database's statistics (each test worker's
        # database holds other tests' rows; for a tiny table a skip scan of the primary key is as cheap), so the
        # indexes are asserted to exist, and the by-memory statements to walk one that holds memory_id.
        led_by = {tuple(r) for r in conn.execute(text("""
            SELECT (SELECT array_agg(a.attname ORDER BY k.n) FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
                    JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum WHERE k.n <= 2)
            FROM pg_index i WHERE i.indrelid = CAST('keyword_postings' AS regclass)""")).scalars()}
        assert ("tenant", "term") in led_by and ("tenant", "memory_id") in led_by, led_by
        conn.rollback()
