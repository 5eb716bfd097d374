"""Deep recall against the scripted model server (tests/deep_recall_support.py, the OpenAI chat protocol on
loopback): the per-iteration overhead of the sandbox and the live APIs (p50/p95 of each block's wall time from the
audit: an empty block, a search, a transcript load + grep), the model round trip over HTTP, and the cache hit.

    .venv/bin/python -m bench.deep_recall --iterations 40

Starts its own embedded PostgreSQL and Redis in a temporary folder (no worker: the projectors are caught up here).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=40)
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="engramlog-bench-deep-"))
    os.environ["ENGRAMLOG_DATA_DIR"] = str(data_dir)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from stack.postgres import EmbeddedPostgres
    from stack.redis import EmbeddedRedis

    pg, redis = EmbeddedPostgres(data_dir), EmbeddedRedis(data_dir)
    os.environ["DATABASE_URL"], os.environ["REDIS_URL"] = pg.url, redis.url
    pg.start()
    redis.start()
    try:
        from migrations.runner import upgrade_to_head

        upgrade_to_head(pg.url)
        run(args.iterations)
    finally:
        redis.stop()
        pg.stop()


def run(iterations: int) -> None:
    from deep_recall.service import DeepRequest, deep_recall
    from domain.privacy import NO_POLICY
    from infra.db import get_engine
    from infra.embedding import get_embedder
    from infra.settings import get_settings, replace
    from projections.runner import catch_up
    from projections.sessions import SessionsProjector
    from recall.hitlog import served_record
    from services.sessions import append_messages
    from tests.deep_recall_support import ROOT, code, start_scripted_models

    engine, tenant, meta = get_engine(), "bench", {"source": "bench"}
    for s in range(20):
        append_messages(engine, tenant, f"s{s}", [{"role": "user" if i % 2 == 0 else "assistant",
                                                   "content": f"session {s} message {i}: the walrus deploy {i % 7}"}
                                                  for i in range(10)], meta, agent_id="ops")
    catch_up(engine, SessionsProjector(), 1000, max_seconds=300)
    models, server, thread = start_scripted_models()
    settings = replace(get_settings(), llm_model=ROOT, llm_base_url=models.url, deep_shortcut_hits=1000,
                       deep_max_iterations=iterations + 5, deep_cap_iterations=iterations + 5)
    embedder = get_embedder(settings.embedding_model)
    turn = ("```python\npass\n```\n```python\nhits = search('walrus deploy', max_results=10)\n"
            "print(len(hits))\n```\n```python\nt = load_transcript('s3')\nprint(len(grep(t, 'walrus')))\n```\n")
    models.script(ROOT, *[turn] * iterations, code("FINAL('done')"))
    started = time.perf_counter()
    answer = deep_recall(engine, embedder, settings, DeepRequest("how did the walrus deploy go?", "ops"), tenant,
                         meta, NO_POLICY)
    total_s = time.perf_counter() - started
    import uuid

    audit = served_record(engine, tenant, uuid.UUID(answer["recall_id"]))["data"]["explanation"]["deep_recall"]
    turns = audit["iterations"][:iterations]
    empty = [t["blocks"][0]["ms"] for t in turns]
    search = [t["blocks"][1]["ms"] for t in turns]
    transcript = [t["blocks"][2]["ms"] for t in turns]
    per_iteration = [sum(b["ms"] for b in t["blocks"]) for t in turns]
    model = [t["model_ms"] for t in turns]
    hits = []
    for _ in range(20):
        t0 = time.perf_counter()
        again = deep_recall(engine, embedder, settings, DeepRequest("how did the walrus deploy go?", "ops"), tenant,
                            meta, NO_POLICY)
        hits.append((time.perf_counter() - t0) * 1000)
        assert again["cached"]
    print(f"deep recall: {answer['iterations']} iterations, stopped {answer['stopped']}, {total_s:.2f}s in all")
    for name, values in (("empty block (sandbox only)", empty), ("search block (recall/multi)", search),
                         ("load_transcript + grep block", transcript),
                         ("per iteration: sandbox + live APIs", per_iteration),
                         ("model round trip (scripted, HTTP)", model), ("cache hit (whole call)", hits)):
        print(f"{name:38s} p50 {statistics.median(values):8.2f} ms   p95 {pct(values, 0.95):8.2f} ms")
    server.should_exit = True
    thread.join(10)


if __name__ == "__main__":
    main()
