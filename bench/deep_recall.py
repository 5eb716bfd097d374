"""Deep recall against the scripted model server (tests/deep_recall_support.py, the OpenAI chat protocol on
loopback): the per-iteration overhead of the sandbox and the live APIs (p50/p95 of each block's wall time from the
audit: an empty block, a search, a transcript load + grep), the model round trip over HTTP, and the cache hit.

    .venv/bin/python -m bench.deep_recall --iterations 40

Starts its own embedded PostgreSQL and Redis in a temporary folder (no worker: the projectors are caught up here).

`--locomo`: the smart shortcut's rate on the LoCoMo dev questions, through the path users take with no model
configured: POST /v1/deep_recall (SDK) answers the quick recall's results, the shortcut's when at least
ENGRAMLOG_DEEP_SHORTCUT_HITS (3) of them score >= ENGRAMLOG_DEEP_SHORTCUT_SCORE (0.8). The conversations are
ingested as bench/locomo.py does (one agent_id each, a memory per turn, through the governor unless
--must-keep); each question with evidence of categories 1-4 and each adversarial one (5) is asked in its
conversation's scope. Reported: the share answered by the shortcut, and R@10 (bench/locomo.py's scoring of the
returned memories' dia_ids) of the shortcut's answers and of the rest.

    .venv/bin/python -m bench.deep_recall --locomo [--data ../shared/eval/locomo/locomo_dev.json] [--must-keep]

Starts its own stack (embedded PostgreSQL and Redis, a worker, the API on loopback, no model), or uses
--api-url (whose tenant should hold nothing else: other domains' results count toward the shortcut too).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

LOCOMO_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "eval" / "locomo" / "locomo_dev.json"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--locomo", action="store_true", help="the shortcut rate on the LoCoMo dev questions")
    parser.add_argument("--data", type=Path, default=LOCOMO_DATA)
    parser.add_argument("--conv", action="append", default=[], help="only these sample ids (repeatable)")
    parser.add_argument("--must-keep", action="store_true", help="ingest every turn as must-keep (no governor)")
    parser.add_argument("--api-url", help="a running stack (default: start one)")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    if args.locomo:
        locomo_main(args)
        return
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
        shutil.rmtree(data_dir, ignore_errors=True)


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
    embedder = get_embedder(settings.embedding.embedding_model)
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


# ---------------------------------------------------------------------------------------------------------
# --locomo: the smart shortcut on the LoCoMo dev questions


def _ingest(client: Any, agent_id: str, conv: Any, must_keep: bool) -> tuple[int, dict[str, str]]:
    """A conversation's turns as bench/locomo.py writes them; answers the last position and each written
    memory's dia_id (a result's own turn, as bench/locomo.py scores a result by its metadata's dia_id)."""
    from bench.locomo import BATCH

    memories = [{"content": t["content"], "kind": "message", "agent_id": agent_id,
                 "occurred_at": t["occurred_at"].isoformat(),
                 "metadata": {"dia_id": t["dia_id"], "sample_id": conv.sample_id},
                 "idempotency_key": f"{agent_id}-{t['dia_id']}", **({"must_keep": True} if must_keep else {})}
                for t in conv.turns]
    last, dia_of = 0, {}
    for start in range(0, len(memories), BATCH):
        batch = memories[start:start + BATCH]
        for m, w in zip(batch, client.remember_many(batch), strict=True):
            dia_of[str(w.memory_id)] = m["metadata"]["dia_id"]
            last = max(last, w.position)
    return last, dia_of


def shortcut_split(per_question: list[dict[str, Any]]) -> dict[str, Any]:
    """The share of questions the shortcut answered, and the scores of its answers and of the rest."""
    from bench.common import percentile
    from bench.locomo import aggregate

    tops = [q["top_score"] for q in per_question if q["top_score"] is not None]
    high = [min(q["high_n"], 3) for q in per_question]  # results at or above the score: 0, 1, 2, 3 or more
    out: dict[str, Any] = {"n": len(per_question),
                           "results_at_or_above_the_score": {str(n): high.count(n) for n in range(4)},
                           "top_score_p50": round(percentile(tops, 50), 4) if tops else None,
                           "top_score_p90": round(percentile(tops, 90), 4) if tops else None}
    for name, group in (("shortcut", [q for q in per_question if q["shortcut_fired"]]),
                        ("rest", [q for q in per_question if not q["shortcut_fired"]])):
        scored = [q["scores"] for q in group if "scores" in q]
        out[name] = {"n": len(group), "share": round(len(group) / len(per_question), 4) if per_question else None,
                     **({k: round(v, 4) for k, v in aggregate(scored).items()} if scored else {}),
                     "mean_results": round(sum(q["returned_n"] for q in group) / len(group), 2) if group else None}
    return out


def run_locomo(api_url: str, data: Path, convs: list[str], must_keep: bool) -> dict[str, Any]:
    import secrets

    from engramlog_client import Engramlog

    from bench.common import latency_stats, machine, wait_projected
    from bench.locomo import ABSTAIN_CATEGORY, SCORED_CATEGORIES, dedupe, load_conversations, score_question
    from infra.settings import get_settings

    settings = get_settings()  # the shortcut's rule, as the API reads it from the same environment
    hits, floor = settings.deep.deep_shortcut_hits, settings.deep.deep_shortcut_score
    conversations = load_conversations(data, convs)
    run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    per_question: list[dict[str, Any]] = []
    latencies: list[float] = []
    started = time.perf_counter()
    with Engramlog(api_url, timeout=120.0) as client:
        dia_of: dict[str, str] = {}
        last = 0
        for conv in conversations:
            position, dias = _ingest(client, f"deep-{run_id}-{conv.sample_id}", conv, must_keep)
            dia_of.update(dias)
            last = max(last, position)
            print(f"  ingested {conv.sample_id}: {len(conv.turns)} turns ({time.perf_counter() - started:.0f}s)",
                  flush=True)
        ingest_s = time.perf_counter() - started
        projected_s = wait_projected(client, last, timeout_s=1800)
        print(f"ingest {ingest_s:.0f}s, all projected {projected_s:.0f}s later", flush=True)
        asked_from = time.perf_counter()
        mismatched = 0
        for conv in conversations:
            for q in conv.questions:
                scored = q.category in SCORED_CATEGORIES and bool(q.evidence)
                if not scored and q.category != ABSTAIN_CATEGORY:
                    continue
                t0 = time.perf_counter()
                answer = client.deep_recall(q.question, agent_id=f"deep-{run_id}-{conv.sample_id}")
                latencies.append((time.perf_counter() - t0) * 1000)
                results = answer.results
                fired = sum(1 for r in results if r["score"] >= floor) >= hits  # the service's own rule
                mismatched += fired != (answer.reason or "").startswith(f"{len(results)} results scored")
                ranked = dedupe([dia_of[str(r["memory_id"])] for r in results
                                 if r.get("domain") == "memories" and str(r.get("memory_id")) in dia_of])
                record: dict[str, Any] = {"sample_id": conv.sample_id, "qa_index": q.index, "category": q.category,
                                          "shortcut_fired": fired, "returned_n": len(results),
                                          "high_n": sum(1 for r in results if r["score"] >= floor),
                                          "top_score": max((r["score"] for r in results), default=None),
                                          "iterations": answer.iterations, "returned": ranked[:10]}
                if scored:
                    record["scores"] = score_question(ranked, q.evidence)
                per_question.append(record)
                if len(per_question) % 200 == 0:
                    print(f"  asked {len(per_question)} ({time.perf_counter() - asked_from:.0f}s)", flush=True)
    answerable = [q for q in per_question if q["category"] in SCORED_CATEGORIES]
    adversarial = [q for q in per_question if q["category"] == ABSTAIN_CATEGORY]
    return {"run_id": run_id, "data": str(data), "conversations": [c.sample_id for c in conversations],
            "ingest": {"must_keep": must_keep, "memories": sum(len(c.turns) for c in conversations),
                       "write_s": round(ingest_s, 1), "all_projected_after_s": round(projected_s, 1)},
            "rule": {"hits": hits, "score": floor, "via": "POST /v1/deep_recall, no model configured"},
            "categories_1_4": shortcut_split(answerable),
            "by_category": {str(c): shortcut_split([q for q in answerable if q["category"] == c])
                            for c in SCORED_CATEGORIES},
            "category_5": shortcut_split(adversarial),
            "answers_from_the_loop": sum(1 for q in per_question if q["iterations"]),
            "reason_disagrees_with_rule": mismatched,
            "deep_recall_ms": latency_stats(latencies), "ask_s": round(time.perf_counter() - asked_from, 1),
            "machine": {**machine(), "loadavg_at_start": load_at_start}}


def _print_locomo(report: dict[str, Any]) -> None:
    from bench.common import machine_line

    print(machine_line(report["machine"]))
    ingest = report["ingest"]
    print(f"ingest ({'must-keep' if ingest['must_keep'] else 'governor, the default write path'}): "
          f"{ingest['memories']} turns in {ingest['write_s']}s, projected {ingest['all_projected_after_s']}s later; "
          f"questions asked in {report['ask_s']}s, deep recall p50 {report['deep_recall_ms']['p50']} ms")
    for name, split in [("categories 1-4", report["categories_1_4"]),
                        *[(f"  category {c}", s) for c, s in report["by_category"].items()],
                        ("category 5 (adversarial)", report["category_5"])]:
        line = f"{name:26s} n={split['n']:5d}"
        for part in ("shortcut", "rest"):
            s = split[part]
            r10 = f" R@10 {s['r@10']:.3f} MRR {s['mrr@10']:.3f}" if "r@10" in s else ""
            line += f" | {part} {s['n']:4d} ({(s['share'] or 0) * 100:5.1f}%){r10}"
        print(line)
    split = report["categories_1_4"]
    print(f"categories 1-4: questions by results scoring >= {report['rule']['score']} (0, 1, 2, 3+): "
          f"{list(split['results_at_or_above_the_score'].values())}; top score p50 {split['top_score_p50']}, "
          f"p90 {split['top_score_p90']}")
    print(f"answers from the loop (should be 0 with no model): {report['answers_from_the_loop']}; "
          f"reason disagrees with the rule: {report['reason_disagrees_with_rule']}")


def locomo_main(args: Any) -> None:
    from bench.common import save_result, start_stack

    if args.api_url:
        report = run_locomo(args.api_url, args.data, args.conv, args.must_keep)
    else:
        os.environ["ENGRAMLOG_LLM_MODEL"] = ""  # the default path: no model, the quick recall's results answer
        with start_stack():
            from api.app import create_app
            from bench.mcp_overhead import _Server
            from bench.recallable_lag import _worker

            worker = _worker()
            server = _Server(create_app())
            try:
                report = run_locomo(server.url, args.data, args.conv, args.must_keep)
            finally:
                server.stop()
                worker.terminate()
                worker.wait(30)
    _print_locomo(report)
    print(f"saved {save_result('deep-recall-locomo', report, args.output)}")


if __name__ == "__main__":
    main()
