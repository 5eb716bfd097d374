"""recall/multi with all five domains populated in one tenant, on the path users take: the real stack
(bench/sessions_recall.py real_stack: `engramlog up`'s launcher with a worker and uvicorn, default settings), every
domain filled over HTTP and projected by the worker, then POST /v1/recall/multi with the default fan-out (no
domains named: every domain with data in the scope, the configured ceiling of 20 shared as quotas of 20 // 5).

The tenant (the keyless API's `default`):
- memories: `--memories` governed writes (POST /v1/memories/batch, bench/corpus.py sentences, 10 agents);
- knowledge: `--sections` generated sections (bench/knowledge.py generated_library: 10 per document, PUT batch);
- sessions: `--messages` session messages (POST /v1/sessions/{id}/messages, 200 a session, bench/corpus.py
  sentences, so they share the memories' vocabulary);
- transcripts: `--transcripts` transcripts of `--turns` turns (PUT /v1/transcripts/{id}, bench/transcripts.py);
- code: `engramlog code index` of installed packages (`--package`, default rich; several: one repo each), the CLI
  against the API.
Queries, round-robin over the domains' material: words of a memory sentence, of a session sentence, 3 concept
words of a generated section, code questions (bench/code_index.py QUERIES), 3 transcript words.

Reported: what each domain holds; the default fan-out's wall (client) and served (latency_ms) p50/p95 and each
bucket's mean size; each domain alone over HTTP (domains [d], k = the fan-out's quota); and each domain's search
timed in process on the same database with the same quota and query vector (its own share of the fan-out, without
HTTP, the query embedding and the hit-log append). The load average with each figure (other work shares the CPUs).

    python -m bench.recall_multi [--memories 3000] [--sections 1000] [--messages 10000] [--transcripts 3]
        [--turns 2000] [--package rich [...]] [--queries 150] [--output FILE]

At 10 times the default sizes (issue 16): --memories 30000 --sections 10000 --messages 100000 --transcripts 30
--package rich httpx pydantic.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import latency_stats, machine, machine_line, save_result
from bench.sessions_recall import SESSION_SIZE, WARMUP, real_stack, timed_multi, wait_projected

DOMAIN_NAMES = ("memories", "knowledge", "sessions", "transcripts", "code")
COUNTS = {
    "memories": "SELECT count(*) FROM memories WHERE tenant = :t",
    "memories_active": "SELECT count(*) FROM memories WHERE tenant = :t AND status = 'active'",
    "memory_vectors": "SELECT count(*) FROM memory_vectors WHERE tenant = :t",
    "knowledge_sections": "SELECT count(*) FROM knowledge_sections WHERE tenant = :t",
    "session_messages": "SELECT count(*) FROM session_messages WHERE tenant = :t",
    "sessions": "SELECT count(*) FROM sessions WHERE tenant = :t",
    "transcripts": "SELECT count(*) FROM transcripts WHERE tenant = :t",
    "transcript_chunks": "SELECT count(*) FROM transcript_chunks WHERE tenant = :t",
    "code_files": "SELECT count(*) FROM code_files WHERE tenant = :t",
    "code_symbols": "SELECT count(*) FROM code_symbols WHERE tenant = :t",
}


def _load_memories(client: Any, n: int) -> tuple[int, float]:
    from bench.corpus import sentences

    started, position = time.perf_counter(), 0
    texts = sentences(n, seed=21)
    for i in range(0, n, 500):
        written = client.remember_many([{"content": t, "agent_id": f"agent-{j % 10}"}
                                        for j, t in enumerate(texts[i:i + 500], i)])
        position = max([position, *(w.position for w in written)])
    return position, time.perf_counter() - started


def _load_knowledge(client: Any, n_sections: int) -> tuple[int, float, list[tuple]]:
    from bench.knowledge import generated_library

    docs, sections = generated_library(n_sections, 1, "library")
    started, position = time.perf_counter(), 0
    for i in range(0, len(docs), 50):
        out = client.put_documents([{"path": p, "content": c} for p, c in docs[i:i + 50]])
        position = max([position, *(d.position or 0 for d in out)])
    return position, time.perf_counter() - started, sections


def _load_sessions(client: Any, n: int, now: datetime) -> tuple[int, float, list[str]]:
    from bench.corpus import sentences

    rng = random.Random(5)
    texts = sentences(n, seed=33)
    started, position = time.perf_counter(), 0
    for s, i in enumerate(range(0, n, SESSION_SIZE)):
        created = now - timedelta(days=90 * rng.random())
        batch = [{"role": ("user", "assistant")[j % 2], "content": t,
                  "created_at": (created + timedelta(seconds=30 * j)).isoformat()}
                 for j, t in enumerate(texts[i:i + SESSION_SIZE])]
        position = max(position, client.append_messages(f"chat-{s}", batch).position)
    return position, time.perf_counter() - started, texts


def _load_transcripts(client: Any, n: int, turns: int) -> tuple[int, float]:
    from bench.transcripts import transcript_lines

    started, position = time.perf_counter(), 0
    for t in range(n):
        body = "".join(transcript_lines(turns, seed=100 + t)).encode("utf-8")
        out = client.request("PUT", f"/v1/transcripts/run-{t}", content=body,
                             headers={"content-type": "application/x-ndjson"})
        position = max(position, out.get("position") or 0)
    return position, time.perf_counter() - started


def _index_code(package: str) -> tuple[float, str]:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"package {package!r} is not installed")
    root = Path(next(iter(spec.submodule_search_locations)))
    started = time.perf_counter()
    out = subprocess.run([str(Path(sys.executable).parent / "engramlog"), "code", "index", str(root), "--repo",
                          package], capture_output=True, text=True, env=dict(os.environ), check=False)
    if out.returncode:
        raise SystemExit(f"engramlog code index failed: {out.stderr[-2000:]}")
    return time.perf_counter() - started, " ".join(out.stdout.split())[-300:]


def _queries(n: int, memories: int, session_texts: list[str], sections: list[tuple]) -> list[str]:
    from bench.code_index import QUERIES
    from bench.corpus import sentences
    from bench.knowledge import CONCEPTS
    from bench.transcripts import WORDS

    rng = random.Random(9)
    memory_texts = sentences(memories, seed=21)

    def words_of(s: str) -> str:
        ws = [w.strip(".,:;") for w in s.split() if len(w) > 3]
        return " ".join(rng.sample(ws, min(4, len(ws))))

    makers = [lambda: words_of(rng.choice(memory_texts)), lambda: words_of(rng.choice(session_texts)),
              lambda: " ".join(CONCEPTS[c][0] for c in rng.sample(rng.choice(sections)[2], 3)),
              lambda: rng.choice(QUERIES), lambda: " ".join(rng.sample(WORDS, 3))]
    return [makers[i % len(makers)]() for i in range(n)]


def _counts() -> dict[str, int]:
    from sqlalchemy import text

    from infra.db import get_engine

    with get_engine().connect() as conn:
        return {k: conn.execute(text(sql), {"t": "default"}).scalar_one() for k, sql in COUNTS.items()}


def in_process(qs: list[str], quota: int) -> dict[str, Any]:
    """Each domain's search, as the fan-out calls it (same quota, the query embedded once beforehand)."""
    from domain.privacy import NO_POLICY
    from infra.db import get_engine
    from infra.embedding import get_embedder, to_pgvector
    from infra.settings import get_settings
    from recall.domains.base import DomainQuery
    from recall.domains.registry import DOMAINS
    from recall.scope import Scope

    engine, embedder = get_engine(), get_embedder(get_settings().embedding.embedding_model)
    times: dict[str, list[float]] = {d: [] for d in DOMAIN_NAMES}
    sizes: dict[str, list[int]] = {d: [] for d in DOMAIN_NAMES}
    for i, q in enumerate(qs):
        dq = DomainQuery(Scope("default"), q, quota, datetime.now(UTC), NO_POLICY, to_pgvector(embedder.encode_one(q)))
        for d in DOMAIN_NAMES:
            t0 = time.perf_counter()
            answer = DOMAINS[d].search(engine, dq)
            if i >= WARMUP:
                times[d].append((time.perf_counter() - t0) * 1000)
                sizes[d].append(len(answer.results))
    return {d: {"search_ms": latency_stats(times[d]), "results_mean": round(sum(sizes[d]) / len(sizes[d]), 2)}
            for d in DOMAIN_NAMES}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from engramlog_client import Engramlog

    now = datetime.now(UTC)
    loads: dict[str, Any] = {}
    with real_stack() as where:
        print(machine_line(), flush=True)
        with Engramlog(where["api_url"], timeout=300) as client:
            if args.reuse and _counts()["memories"]:
                return _measure(args, client, where, {"reused": _counts()}, *_material(args))
            position, seconds = _load_memories(client, args.memories)
            loads["memories"] = {"n": args.memories, "write_s": round(seconds, 1)}
            print(f"  memories: {args.memories} governed writes in {seconds:.1f}s", flush=True)
            p, seconds, sections = _load_knowledge(client, args.sections)
            position = max(position, p)
            loads["knowledge"] = {"sections": args.sections, "put_s": round(seconds, 1)}
            print(f"  knowledge: {args.sections} sections put in {seconds:.1f}s", flush=True)
            p, seconds, session_texts = _load_sessions(client, args.messages, now)
            position = max(position, p)
            loads["sessions"] = {"messages": args.messages, "append_s": round(seconds, 1)}
            print(f"  sessions: {args.messages} messages appended in {seconds:.1f}s", flush=True)
            p, seconds = _load_transcripts(client, args.transcripts, args.turns)
            position = max(position, p)
            loads["transcripts"] = {"n": args.transcripts, "turns": args.turns, "put_s": round(seconds, 1)}
            print(f"  transcripts: {args.transcripts} x {args.turns} turns put in {seconds:.1f}s", flush=True)
            loads["code"] = []
            for package in args.package:
                seconds, said = _index_code(package)
                loads["code"].append({"package": package, "cli_s": round(seconds, 1), "cli_said": said})
                print(f"  code: engramlog code index {package} in {seconds:.1f}s: {said}", flush=True)
            head = max(position, max(p.head or 0 for p in client.projections()))
            loads["projected_after_loads_s"] = round(wait_projected(client, head), 1)
            print(f"  projected {loads['projected_after_loads_s']}s after the loads", flush=True)
            return _measure(args, client, where, loads, session_texts, sections)


def _material(args: argparse.Namespace) -> tuple[list[str], list[tuple]]:
    """What the loaders wrote that the queries are drawn from, made again (both are deterministic)."""
    from bench.corpus import sentences
    from bench.knowledge import generated_library

    return sentences(args.messages, seed=33), generated_library(args.sections, 1, "library")[1]


def query_mix(n: int, memories: int = 3000, messages: int = 10_000, sections: int = 1000) -> list[str]:
    """The first `n` queries of this bench's mix for a store it loaded at these sizes (other benches ask it too)."""
    session_texts, library = _material(argparse.Namespace(messages=messages, sections=sections))
    return _queries(n, memories, session_texts, library)


def _measure(args: argparse.Namespace, client: Any, where: dict[str, Any], loads: dict[str, Any],
             session_texts: list[str], sections: list[tuple]) -> dict[str, Any]:
    counts = _counts()
    print(f"  holds {counts}", flush=True)
    qs = _queries(args.queries + WARMUP, args.memories, session_texts, sections)
    fan_out = timed_multi(client, qs, None, None)
    print(f"recall/multi default fan-out (5 domains): wall p50 {fan_out['wall_ms']['p50']} ms p95 "
          f"{fan_out['wall_ms']['p95']} ms, served p50 {fan_out['served_ms']['p50']} ms p95 "
          f"{fan_out['served_ms']['p95']} ms; buckets {fan_out['bucket_results_mean']} "
          f"(load {fan_out['loadavg_1m_5m_15m']})", flush=True)
    from infra.settings import get_settings

    quota = max(1, get_settings().funnel.recall_multi_ceiling // len(DOMAIN_NAMES))
    alone = {}
    for d in DOMAIN_NAMES:
        alone[d] = timed_multi(client, qs, [d], quota)
        print(f"  {d} alone over HTTP (k={quota}): wall p50 {alone[d]['wall_ms']['p50']} ms p95 "
              f"{alone[d]['wall_ms']['p95']} ms, served p50 {alone[d]['served_ms']['p50']} ms", flush=True)
    inproc = in_process(qs, quota)
    for d, r in inproc.items():
        print(f"  {d} search in process (k={quota}): p50 {r['search_ms']['p50']} ms p95 "
              f"{r['search_ms']['p95']} ms, results {r['results_mean']}", flush=True)
    return {"bench": "recall_multi", "machine": machine(), "stack": where, "loads": loads, "holds": counts,
            "queries": args.queries, "warmup": WARMUP, "quota": quota, "fan_out": fan_out,
            "domain_alone_http": alone, "domain_search_in_process": inproc,
            "path": "HTTP: engramlog_client recall_multi(query) with no domains (every domain with data) and no k "
                    "(the ceiling); real stack (stack/up.py Stack: worker + uvicorn), default settings"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=3000)
    parser.add_argument("--sections", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--transcripts", type=int, default=3)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--package", nargs="+", default=["rich"], help="installed packages to index, each its repo")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--reuse", action="store_true",
                        help="with an external DATABASE_URL/REDIS_URL whose tenant `default` a previous run loaded "
                             "(same sizes): measure it without loading again, e.g. code before and after a change")
    args = parser.parse_args()
    result = run(args)
    result["command"] = (f"python -m bench.recall_multi --memories {args.memories} --sections {args.sections} "
                         f"--messages {args.messages} --transcripts {args.transcripts} --turns {args.turns} "
                         f"--package {' '.join(args.package)} --queries {args.queries}")
    print(f"saved {save_result('recall-multi', result, args.output)}")


if __name__ == "__main__":
    main()
