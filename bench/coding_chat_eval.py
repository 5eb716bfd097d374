"""The memories funnel against plain BM25 on long technical messages (issue 15 item 3), in the same run.

The labelled coding-chat fixture (bench/coding_fixture.py `dev`, and bench/coding_fixture_heldout.py, reported
apart) is written on the default write path: one MemoryRecorded per message through services.append_events, no
must_keep, so the governor's salience gate, reinforcement and update rule decide each one as they would for an
agent; then every projector catches up (real MiniLM vectors). Each question is asked through recall.service.recall
(k = 20, trace on). Compared in the same run, over the same questions:

- funnel: the memories funnel's answer (a hit when a gold message, or the memory it was reinforced into, ranks);
- bm25_leg: the funnel's own keyword leg alone (recall/keyword.py bm25_top over the same recallable memories);
- bm25s: bm25s (stemmed, English stop-words) over every message of the fixture, as written, governor or not.

Figures: hit@1/5/20 and MRR@20 of each, recall latency p50/p95 (the whole recall() call, hit-log included), the
governor's dispositions, and an attribution of every question where the funnel misses the top 5 while its BM25
leg holds gold there: whether the gold was recallable at all, and its rank after each stage (candidates by
composite, the pool after PRF + graph walk, the final answer) with its per-stage scores.

    .venv/bin/python -m bench.coding_chat_eval [--part dev|heldout|both] [--output FILE]
"""

from __future__ import annotations

import argparse
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.coding_fixture import Fixture, dev
from bench.common import latency_stats, machine, machine_line, save_result, start_stack

AGENT = "agent-0"
K = 20
START = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


def memory_id(tenant: str, key: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"coding-chat:{tenant}:{key}")


def write(engine: Any, tenant: str, fx: Fixture) -> float:
    """Each message as its own write, in chat order, minutes apart: the governor decides each."""
    from services.append_events import EventInput, append_events

    started = time.perf_counter()
    for i, m in enumerate(fx.messages):
        append_events(engine, tenant, [EventInput(
            type="MemoryRecorded", occurred_at=START + timedelta(minutes=7 * i), idempotency_key=f"cc:{tenant}:{m.key}",
            data={"memory_id": str(memory_id(tenant, m.key)), "content": m.text, "kind": "observation",
                  "agent_id": AGENT, "tags": ["coding-chat"], "metadata": {"key": m.key}})],
            {"actor": "bench", "source": "bench"})
    return time.perf_counter() - started


def fates(engine: Any, tenant: str) -> tuple[dict[uuid.UUID, str], dict[uuid.UUID, uuid.UUID]]:
    """Each memory's status, and where a reinforced observation went (observation → the memory it reinforced)."""
    from sqlalchemy import text

    with engine.connect() as conn:
        status = {r.memory_id: r.status for r in conn.execute(
            text("SELECT memory_id, status FROM memories WHERE tenant = :t"), {"t": tenant})}
        into = {uuid.UUID(r.o): uuid.UUID(r.m) for r in conn.execute(text(
            "SELECT data->>'observation_id' AS o, data->>'memory_id' AS m FROM events "
            "WHERE tenant = :t AND type = 'MemoryReinforced'"), {"t": tenant})}
    return status, into


def first_rank(ranked: list[uuid.UUID], gold: set[uuid.UUID]) -> int | None:
    return next((i + 1 for i, m in enumerate(ranked) if m in gold), None)


def scores(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks) or 1
    return {"hit@1": round(sum(1 for r in ranks if r and r <= 1) / n, 3),
            "hit@5": round(sum(1 for r in ranks if r and r <= 5) / n, 3),
            "hit@20": round(sum(1 for r in ranks if r and r <= 20) / n, 3),
            "mrr@20": round(sum(1 / r for r in ranks if r and r <= 20) / n, 3)}


def bm25s_ranker(fx: Fixture, tenant: str) -> Any:
    import bm25s  # type: ignore[import-untyped]
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    ids = [memory_id(tenant, m.key) for m in fx.messages]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([m.text for m in fx.messages], stopwords="en", stemmer=stemmer,
                                   show_progress=False), show_progress=False)

    def rank(query: str) -> list[uuid.UUID]:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        docs, _ = retriever.retrieve(tokens, k=min(K, len(ids)), show_progress=False)
        return [ids[int(d)] for d in docs[0]]

    return rank


def evaluate(engine: Any, tenant: str, fx: Fixture) -> dict[str, Any]:
    from domain.memory_status import RECALLABLE
    from domain.text import tokenize
    from infra.embedding import get_embedder
    from infra.settings import get_settings
    from recall.funnel.candidates import bm25_parameters
    from recall.keyword import bm25_top
    from recall.scope import Scope
    from recall.service import RecallRequest, recall

    settings = get_settings()
    embedder = get_embedder(settings.embedding.embedding_model)
    status, into = fates(engine, tenant)
    key_of = {memory_id(tenant, m.key): m.key for m in fx.messages}
    bm25s_rank = bm25s_ranker(fx, tenant)
    scope = Scope(tenant, AGENT)
    meta = {"actor": "bench", "source": "bench"}
    recall(engine, embedder, settings, RecallRequest(scope, "warm up", K), meta)
    ranks: dict[str, list[int | None]] = {"funnel": [], "bm25_leg": [], "bm25s": []}
    wall: list[float] = []
    bm25s_ms: list[float] = []
    losses: list[dict[str, Any]] = []
    per_question: list[dict[str, Any]] = []
    by_kind: dict[str, dict[str, list[int | None]]] = {}
    for q in fx.questions:
        written = {memory_id(tenant, g) for g in q.gold}
        gold = written | {into[g] for g in written if g in into}  # a reinforced message lives on in its target
        t0 = time.perf_counter()
        answer = recall(engine, embedder, settings, RecallRequest(scope, q.text, K, trace=True), meta)
        wall.append((time.perf_counter() - t0) * 1000)
        funnel = [r.memory_id for r in answer.results]
        with engine.connect() as conn:
            leg = list(bm25_top(conn, scope, tokenize(q.text), K, *bm25_parameters(settings), RECALLABLE))
        t0 = time.perf_counter()
        plain = bm25s_rank(q.text)
        bm25s_ms.append((time.perf_counter() - t0) * 1000)
        row = {"funnel": first_rank(funnel, gold), "bm25_leg": first_rank(leg, gold),
               "bm25s": first_rank(plain, written)}
        per_question.append({"question": q.text, "kind": q.kind, "ranks": row})
        for name, r in row.items():
            ranks[name].append(r)
            by_kind.setdefault(q.kind, {n: [] for n in ranks})[name].append(r)
        if (row["funnel"] or 99) > 5 and (row["bm25_leg"] or row["bm25s"] or 99) <= 5:
            trace = answer.details.get("trace", {})
            ids = {n: [uuid.UUID(x) for x in trace.get(n, [])] for n in ("candidates", "pool", "ranked")}
            gold_best = min(gold, key=lambda g: (leg.index(g) if g in leg else 99))
            result = next((r for r in answer.results if r.memory_id == gold_best), None)
            losses.append({
                "question": q.text, "kind": q.kind, "gold": [key_of.get(g, str(g)) for g in gold],
                "gold_status": {key_of.get(g, str(g)): status.get(g) for g in gold},
                "ranks": row, "abstained": answer.abstained["reason"] if answer.abstained else None,
                "stage_rank": {n: first_rank(v, gold) for n, v in ids.items()},
                "winners": [key_of.get(m, str(m)) for m in funnel[:3]],
                "gold_stages": result.explanation if result else None})
    statuses: dict[str, int] = {}
    for m in fx.messages:
        s = status.get(memory_id(tenant, m.key), "absent")
        statuses[s] = statuses.get(s, 0) + 1
    at5 = [(f is not None and f <= 5, g is not None and g <= 5) for f, g in zip(ranks["funnel"], ranks["bm25_leg"],
                                                                                strict=True)]
    return {"messages": len(fx.messages), "questions": len(fx.questions), "dispositions": statuses,
            "reinforced": len(into), "scores": {n: scores(v) for n, v in ranks.items()},
            # per question, at hit@5: the funnel's requirement is never to lose what its own BM25 leg holds
            "funnel_vs_leg_at5": {"leg_only": sum(1 for f, g in at5 if g and not f),
                                  "funnel_only": sum(1 for f, g in at5 if f and not g)},
            "by_kind": {k: {n: scores(v) for n, v in d.items()} for k, d in sorted(by_kind.items())},
            "latency_ms": {"funnel_recall": latency_stats(wall), "bm25s": latency_stats(bm25s_ms)},
            "losses": losses, "per_question": per_question}


def parts(name: str) -> dict[str, Fixture]:
    if name == "dev":
        return {"dev": dev()}
    from bench.coding_fixture_heldout import heldout

    return {"heldout": heldout()} if name == "heldout" else {"dev": dev(), "heldout": heldout()}


def run(part: str = "dev", output: Path | None = None, show_losses: int = 40) -> dict[str, Any]:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=160)
    info = machine()
    console.print(machine_line(info))
    results: dict[str, Any] = {}
    with start_stack() as stack:
        from bench.corpus import project, projector_names
        from infra.db import get_engine
        from infra.embedding import get_embedder
        from infra.settings import get_settings

        engine = get_engine()
        get_embedder(get_settings().embedding.embedding_model).warm()
        for name, fx in parts(part).items():
            tenant = f"coding-{name}"
            write_s = write(engine, tenant, fx)
            for projector in projector_names():
                project(engine, projector)
            results[name] = {"write_s": round(write_s, 2), **evaluate(engine, tenant, fx)}
    for name, r in results.items():
        table = Table(title=f"{name}: {r['messages']} messages, {r['questions']} questions, default write path "
                            f"(dispositions {r['dispositions']}, reinforced {r['reinforced']})")
        for col in ("ranker", "hit@1", "hit@5", "hit@20", "MRR@20"):
            table.add_column(col, justify="left" if col == "ranker" else "right")
        for ranker, s in r["scores"].items():
            table.add_row(ranker, *(f"{s[m]:.3f}" for m in ("hit@1", "hit@5", "hit@20", "mrr@20")))
        console.print(table)
        latency = r["latency_ms"]
        console.print(f"  latency ms: funnel recall {latency['funnel_recall']}, bm25s {latency['bm25s']}")
        for kind, d in r["by_kind"].items():
            console.print(f"  {kind:16s} " + "  ".join(f"{n} {s['hit@5']:.2f}" for n, s in d.items()))
        console.print(f"  funnel misses top 5 where a BM25 ranker has it: {len(r['losses'])}; at hit@5, questions "
                      f"only the BM25 leg answers / only the funnel answers: {r['funnel_vs_leg_at5']}")
        for loss in r["losses"][:show_losses]:
            console.print(f"    {loss['question']!r} gold {loss['gold_status']} ranks {loss['ranks']} stage ranks "
                          f"{loss['stage_rank']} abstained {loss['abstained']} winners {loss['winners']}")
    result = {"bench": "coding_chat_eval", "k": K, "machine": info, "database": stack["database"], "parts": results}
    path = save_result("coding-chat-eval", result, output)
    console.print(f"saved {path}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("dev", "heldout", "both"), default="dev")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    run(args.part, args.output)


if __name__ == "__main__":
    main()
