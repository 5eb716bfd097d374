"""Rebuild and verify of the read models, through the library, the CLI and the HTTP endpoint.

Projections are global (all tenants), so every check here covers whatever the session has written so far;
this module's own tenant adds memories with varied content (English, CJK, repeated terms, tags, metadata).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

ROOT = Path(__file__).resolve().parents[2]
# Every check here replays the whole log: on a database of its own, it replays only this module's writes.
pytestmark = pytest.mark.own_database

CONTENTS = [
    "Alice moved to Lisbon in May and works at a bakery near the river",
    "Bob's favourite food is ramen; he eats ramen every Friday with Alice",
    "The deploy failed because the migration ran twice on the replica",
    "我喜欢在北京吃烤鸭",
    "東京タワーは夜になると赤く光ります",
    "Never run the reindex during business hours: it locks the orders table",
    "Carol prefers tea over coffee, and green tea over black tea",
    "The quarterly review moved from Tuesday to Thursday afternoon",
    "🎉 launch party on the rooftop 🥳 with pizza",
    "Dave's cat Biscuit is afraid of the vacuum cleaner",
]


@pytest.fixture(scope="module")
def projected(engine):
    """This module's memories, and every projection caught up in-process (no worker runs here)."""
    import uuid

    from projections.registry import PROJECTORS
    from projections.runner import catch_up, status
    from services.remember import MemoryInput, remember

    tenant = f"rebuild-{uuid.uuid4().hex[:8]}"
    done = remember(engine, tenant, [
        MemoryInput(content=c, agent_id=f"ag{i % 3}", project="p" if i % 2 else None, tags=[f"t{i}"],
                    metadata={"i": i, "nested": {"ok": True}}, kind="fact" if i % 4 == 0 else "observation")
        for i, c in enumerate(CONTENTS)], {"source": "test"})
    from services.knowledge import DocumentInput, put_document, put_documents

    put_documents(engine, tenant, [DocumentInput("ops/deploys.md", "# Ops\n## Rollback\nundo\n## Canary\n5%\n"),
                                   DocumentInput("notes.txt", CONTENTS[3], project="p", tags=["t"])],
                  {"source": "test"})
    put_document(engine, tenant, DocumentInput("ops/deploys.md", "# Ops\n## Rollback\nundo, then page\n"),
                 {"source": "test"})  # a re-put: a replaced section and a changed one
    from domain.privacy import NO_POLICY
    from services.sessions import append_messages, mark_sent

    append_messages(engine, tenant, "s-rebuild", [{"role": "user", "content": c} for c in CONTENTS[:4]]
                    + [{"message_id": "pending", "role": "assistant", "content": CONTENTS[5], "sent": False},
                       {"message_id": "later", "role": "assistant", "content": CONTENTS[6], "sent": False}],
                    {"source": "test"}, agent_id="ag0")
    mark_sent(engine, tenant, "s-rebuild", "later", {"source": "test"}, NO_POLICY)  # one pending, one sent later
    from projections.transcripts import TranscriptsProjector
    from recall.domains.transcripts import drill_chunk
    from services.transcripts import put_transcript

    lines = [f"[2026-01-0{1 + i % 9}] {'USER' if i % 2 == 0 else 'ASSISTANT'}: {c}\n" for i, c in enumerate(CONTENTS)]
    put_transcript(engine, tenant, "tr-rebuild", "".join(lines[:10]), {"source": "test"})
    put_transcript(engine, tenant, "tr-rebuild", "".join(lines), {"source": "test"})  # a delta: the last chunk grows
    catch_up(engine, TranscriptsProjector(), 500, max_seconds=120)
    drill_chunk(engine, tenant, "tr-rebuild", 0, NO_POLICY, {"source": "test"})  # a hit: one chunk's vector
    from services.code import FileInput, write_files

    write_files(engine, tenant, "demo", [  # a call across files: symbols and a resolved call edge
        FileInput("util.py", "def helper(x):\n    return x + 1\n"),
        FileInput("main.py", "from util import helper\n\n\ndef run():\n    return helper(2)\n")],
        {"source": "test"})
    from infra.embedding import get_embedder
    from infra.settings import get_settings
    from recall.scope import Scope
    from recall.service import RecallRequest, recall

    for p in PROJECTORS.values():
        catch_up(engine, p, 500, max_seconds=120)
    settings = get_settings()  # a recall of this module's own, on the projected memories: its hit-log rows
    answer = recall(engine, get_embedder(settings.embedding.embedding_model), settings,
                    RecallRequest(Scope(tenant), "where did Alice move?", 3), {"source": "test"})
    assert answer.results  # recall_hits and memory_activity get rows of this module's own
    for p in PROJECTORS.values():
        catch_up(engine, p, 500, max_seconds=120)
    with engine.connect() as conn:
        for p in PROJECTORS.values():
            assert status(conn, p).lag_events == 0
    return tenant, done


def verify_all(engine):
    from projections.rebuild import verify
    from projections.registry import PROJECTORS

    return {name: verify(engine, p, batch_size=300) for name, p in PROJECTORS.items()}


def rebuild_all(engine) -> None:
    from projections.rebuild import rebuild
    from projections.registry import PROJECTORS

    for p in PROJECTORS.values():
        rebuild(engine, p, batch_size=300)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}  # DATABASE_URL and REDIS_URL point at the test servers
    script = Path(sys.executable).parent / "engramlog"  # the installed console script
    command = [str(script)] if script.exists() else [sys.executable, "-m", "cli.main"]
    return subprocess.run([*command, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def table_rows(engine, table: str, tenant: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text(f"SELECT count(*) FROM {table} WHERE tenant = :t"), {"t": tenant}).scalar_one()


def test_rebuild_then_verify_reports_identical(engine, projected):
    tenant, done = projected
    progress: list[tuple[int, int]] = []
    from projections.rebuild import rebuild
    from projections.registry import PROJECTORS
    from projections.runner import load_checkpoint

    index_sql = text("SELECT tablename, indexname, regexp_replace(indexdef, ' ON \\S+', '') FROM pg_indexes "
                     "WHERE schemaname = 'public' AND tablename = ANY(:tables) ORDER BY 1, 2")
    all_tables = [t for p in PROJECTORS.values() for t in p.tables]
    with engine.connect() as conn:
        before = {n: load_checkpoint(conn, n) for n in PROJECTORS}
        indexes_before = conn.execute(index_sql, {"tables": all_tables}).all()
        events = conn.execute(text("SELECT count(*) FROM events")).scalar_one()
    assert ("memory_vectors", "memory_vectors_hnsw") in {(r[0], r[1]) for r in indexes_before}
    # Many small batches: 7 events each on this module's own log alone, ~40 batches on the whole session's log (the
    # log holds every earlier module's events: batches of 7 over thousands of events were ~800 per projector).
    batch_size = max(7, events // 40)
    for name, p in PROJECTORS.items():
        checkpoint = rebuild(engine, p, batch_size=batch_size, progress=lambda d, t: progress.append((d, t)))
        assert checkpoint == before[name]  # rebuilt to exactly where the live projection was
    assert progress and all(d <= t for d, t in progress) and progress[-1][0] == progress[-1][1]
    # The rebuilt tables are in place, with this tenant's rows, and no scratch schema is left over.
    assert table_rows(engine, "memories", tenant) == len(CONTENTS)
    assert table_rows(engine, "keyword_docs", tenant) == len(CONTENTS)
    assert table_rows(engine, "memory_vectors", tenant) == len(CONTENTS)
    with engine.connect() as conn:
        schemas = conn.execute(text("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'rebuild_%' "
                                    "OR nspname LIKE 'verify_%'")).scalars().all()
        assert schemas == []
        # The swapped-in tables have the same indexes, under the same names, as the migrations made them.
        assert conn.execute(index_sql, {"tables": all_tables}).all() == indexes_before

    reports = verify_all(engine)
    for name, report in reports.items():
        assert report.identical, (name, [t.samples for t in report.tables])
        assert report.position == before[name].position
        for t in report.tables:
            assert t.live_rows == t.rebuilt_rows and t.only_live == t.only_rebuilt == 0, t
            # privacy_policies: this module sets none (tests/e2e/test_privacy_gate.py rebuilds it with rows);
            # deep_recall_store, blind_spots: tests/e2e/test_deep_recall.py rebuilds them with rows
            assert t.live_rows > 0 or t.table in ("memory_history", "memory_activity", "memory_activity_versions",
                                                  "memory_edges", "privacy_policies", "knowledge_section_vectors",
                                                  "deep_recall_store", "blind_spots"), t

    # Recall still works on the rebuilt models.
    from infra.embedding import get_embedder
    from infra.settings import get_settings
    from recall.scope import Scope
    from recall.service import RecallRequest, recall

    answer = recall(engine, get_embedder(get_settings().embedding.embedding_model), get_settings(),
                    RecallRequest(Scope(tenant), "where does Alice live?", 3), {"source": "test"})
    assert answer.results[0].memory_id == done[0].memory_id


def test_cli_verify_all_exits_0_and_says_identical(engine, projected):
    result = cli("projections", "verify", "--all")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if ": identical" in line or "DIFFERENT" in line]
    tables = {line.split(":")[0] for line in lines}
    from projections.registry import PROJECTORS

    assert tables == {f"{name}.{table}" for name, p in PROJECTORS.items() for table in p.tables}, result.stdout
    assert {"memories.memories", "keyword.keyword_docs", "keyword.keyword_postings", "keyword.keyword_terms",
            "keyword.keyword_stats", "vectors.memory_vectors"} <= tables
    assert all("identical" in line for line in lines) and "DIFFERENT" not in result.stdout


def test_verify_detects_tampering_and_rebuild_repairs_it(engine, projected, http):
    tenant, done = projected
    victim = done[0].memory_id
    with engine.begin() as conn:
        conn.execute(text("UPDATE memories SET content = 'tampered by hand' WHERE tenant = :t AND memory_id = :m"),
                     {"t": tenant, "m": victim})
        conn.execute(text("UPDATE keyword_stats SET n_docs = n_docs + 1 WHERE tenant = :t"), {"t": tenant})
        conn.execute(text("DELETE FROM memory_vectors WHERE tenant = :t AND memory_id = :m"),
                     {"t": tenant, "m": done[1].memory_id})

    reports = verify_all(engine)
    assert not reports["memories"].identical
    mem = next(t for t in reports["memories"].tables if t.table == "memories")
    assert (mem.only_live, mem.only_rebuilt) == (1, 1)
    assert any("tampered by hand" in s for s in mem.samples) and any(CONTENTS[0][:40] in s for s in mem.samples)
    keyword = {t.table: t for t in reports["keyword"].tables}
    assert not keyword["keyword_stats"].identical and keyword["keyword_postings"].identical
    vectors = {t.table: t for t in reports["vectors"].tables}
    vec = vectors["memory_vectors"]
    assert (vec.only_live, vec.only_rebuilt, vec.rebuilt_rows - vec.live_rows) == (0, 1, 1)
    assert vectors["memory_vector_counts"].identical  # the row deleted by hand, not by the projector: still counted

    # The CLI reports it and exits non-zero.
    result = cli("projections", "verify", "memories")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "DIFFERENT" in result.stdout and "tampered by hand" in result.stdout
    # verify changed nothing.
    with engine.connect() as conn:
        assert conn.execute(text("SELECT content FROM memories WHERE tenant = :t AND memory_id = :m"),
                            {"t": tenant, "m": victim}).scalar_one() == "tampered by hand"

    # Repair: memories through the HTTP endpoint, keyword through the CLI, vectors through the library.
    r = http.post("/v1/projections/memories/rebuild")
    assert r.status_code == 200, r.text
    assert r.json()["projection"] == "memories"
    assert http.post("/v1/projections/nope/rebuild").status_code == 404
    result = cli("projections", "rebuild", "keyword")
    assert result.returncode == 0, result.stdout + result.stderr
    from projections.rebuild import rebuild
    from projections.registry import PROJECTORS

    rebuild(engine, PROJECTORS["vectors"], batch_size=300)

    reports = verify_all(engine)
    assert all(r.identical for r in reports.values()), {n: [t.samples for t in r.tables] for n, r in reports.items()}
    with engine.connect() as conn:
        assert conn.execute(text("SELECT content FROM memories WHERE tenant = :t AND memory_id = :m"),
                            {"t": tenant, "m": victim}).scalar_one() == CONTENTS[0]
        assert conn.execute(text("SELECT n_docs FROM keyword_stats WHERE tenant = :t"),
                            {"t": tenant}).scalar_one() == len(CONTENTS)
    assert table_rows(engine, "memory_vectors", tenant) == len(CONTENTS)
    # The CLI that exited 1 on the tampered projection exits 0 on it repaired (every projection's verify through the
    # CLI: test_cli_verify_all_exits_0_and_says_identical; every one repaired: verify_all above).
    result = cli("projections", "verify", "memories")
    assert result.returncode == 0 and "DIFFERENT" not in result.stdout, result.stdout + result.stderr
    assert "memories.memories: identical" in result.stdout, result.stdout
