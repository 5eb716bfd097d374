"""LoCoMo retrieval evaluation through the public HTTP API (`engramlog eval locomo`).

Protocol: ../shared/eval/README.md. Each conversation is ingested as the memories of its own agent_id
(`locomo-<run id>-<sample id>`, so repeated runs never mix), one memory per turn with content
`"<speaker>: <text>"`, the session date as `occurred_at`, and `{"dia_id", "sample_id"}` as metadata. Every
question of categories 1-4 with evidence is asked with k = 10 within its conversation's scope and the
returned dia_ids are scored against the normalised evidence: recall@1/5/10, hit@1/5/10, MRR@10 and nDCG@10,
per category and overall (micro-averaged over questions). Category 5 (adversarial: the answer is not in the
conversation) is scored by abstention: the share of questions answered with no result at all; beside it, the
share of answerable questions (categories 1-4) wrongly abstained.

Ingest uses must_keep = true (an imported transcript: every turn is kept, the salience gate is bypassed);
`--gate` ingests without it, so the gate's cost in recall shows (turns it discarded, staged or folded into a
reinforced memory are not recallable as themselves; attribution counts them as "not kept").

Attribution (`--attribution`, the AWM study): every question is asked with `trace`, so the answer lists the ids
each funnel stage kept, and each gold memory is located at the last stage it reached: found (returned in the
top k), abstained (in the top k, but the gate returned nothing), cut at rerank (in the rerank pool, not in the
top k), cut by the composite (a candidate that the composite, PRF and graph walk ranked out of the pool),
never a candidate, or not kept (gate run only). A question is attributed to its best-placed gold memory.

The dataset's reading and normalisation (bench/locomo_data.py) and the scoring (bench/locomo_metrics.py) are pure,
so they are unit-tested on toy examples (tests/unit/test_bench_locomo.py); bench/locomo_report.py prints a run's
report. Every name other modules use is importable from here (`__all__`). The saved JSON holds ids, categories
and scores only, never the dataset's text (CC BY-NC: the data stays in ../shared/eval/). A run saves its summary
(every figure, no per-question list) as bench/results/locomo-<stamp>-summary.json, committed, and the whole
report with each question's ranking as bench/results/runs/locomo-<stamp>.json (about 1 MB, git-ignored).
"""

from __future__ import annotations

import json
import secrets
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from bench.common import RESULTS_DIR, machine, percentile, wait_projected
from bench.locomo_data import (
    ABSTAIN_CATEGORY,
    CATEGORY_NAMES,
    SCORED_CATEGORIES,
    Conversation,
    Question,
    load_conversations,
    normalise_evidence,
    parse_session_date,
    turn_content,
)
from bench.locomo_folds import lines as fold_lines
from bench.locomo_folds import out_of_fold
from bench.locomo_metrics import (
    ATTRIBUTION_STAGES,
    CUTOFFS,
    LABELS,
    METRICS,
    STAGE_LABELS,
    aggregate,
    attribute,
    attribution_totals,
    dedupe,
    hit_at,
    locate,
    mrr_at,
    ndcg_at,
    recall_at,
    score_question,
    summarise,
)
from bench.locomo_report import BASELINES, print_attribution, print_report

BATCH = 1000  # POST /v1/memories/batch takes at most 1,000 memories
RUNS_DIR = RESULTS_DIR / "runs"  # per-question dumps of each run: git-ignored (.gitignore), the summaries are committed
FIRST_QUERY_DEADLINE_S = 600.0


def _ingest(client: Any, run_id: str, conv: Conversation, must_keep: bool = True
            ) -> tuple[int, float, dict[str, str | None], dict[str, str], dict[str, str]]:
    """Write a conversation's turns. Answers the last position, the seconds taken, each dia_id's memory (the
    memory holding the turn: itself, or the one it reinforced; None when the gate discarded or staged it),
    each dia_id's disposition (active, staging, discard or reinforced) and each written memory's dia_id."""
    agent_id = f"locomo-{run_id}-{conv.sample_id}"
    memories = [{
        "content": t["content"], "kind": "message", "agent_id": agent_id,
        "occurred_at": t["occurred_at"].isoformat(),
        "metadata": {"dia_id": t["dia_id"], "sample_id": conv.sample_id},
        "idempotency_key": f"locomo-{run_id}-{conv.sample_id}-{t['dia_id']}",
        **({"must_keep": True} if must_keep else {}),
    } for t in conv.turns]
    started = time.perf_counter()
    last = 0
    holder: dict[str, str | None] = {}
    dispositions: dict[str, str] = {}
    dia_of: dict[str, str] = {}
    for start in range(0, len(memories), BATCH):
        batch = memories[start:start + BATCH]
        written = [w.model_dump(mode="json") for w in client.remember_many(batch)]
        last = max(last, max(w["position"] for w in written))
        for m, w in zip(batch, written, strict=True):
            disposition = w.get("disposition") or "active"
            if w.get("reinforced"):
                disposition = "reinforced"
            dispositions[m["metadata"]["dia_id"]] = disposition
            kept = w.get("reinforced") or (w["memory_id"] if disposition in ("active", "reinforced") else None)
            holder[m["metadata"]["dia_id"]] = str(kept) if kept else None
            dia_of[str(w["memory_id"])] = m["metadata"]["dia_id"]
    return last, time.perf_counter() - started, holder, dispositions, dia_of


def _ask(client: Any, query: str, k: int, agent_id: str, trace: bool | None, multi: bool,
         min_position: int | None = None, reference_time: datetime | None = None) -> dict[str, Any]:
    """One question: POST /v1/recall, or (multi) the memories domain through POST /v1/recall/multi, its bucket
    answered in /v1/recall's shape (metadata, latency, abstained). `reference_time`: the clock the question's
    time words are read against (the conversation's latest session date)."""
    if not multi:
        return client.recall(query, k=k, agent_id=agent_id, min_position=min_position,
                             trace=trace, reference_time=reference_time).model_dump(mode="json")
    out = client.recall_multi(query, domains=["memories"], k=k, agent_id=agent_id,
                              min_position=min_position).model_dump(mode="json")
    [bucket] = out["buckets"]
    reason = bucket.get("reason") or ""
    return {"recall_id": out["recall_id"], "latency_ms": out["latency_ms"], "details": {},
            "abstained": {"reason": reason, "channels": {}} if reason.startswith("abstained") else None,
            "results": [{"memory_id": r["memory_id"], "content": r["content"], "score": r["score"],
                         "metadata": r["fields"].get("metadata", {})} for r in bucket["results"]]}


def _recall_waiting(client: Any, query: str, k: int, agent_id: str, min_position: int,
                    trace: bool | None = None, multi: bool = False,
                    reference_time: datetime | None = None) -> dict[str, Any]:
    """The first query of a conversation: read-your-writes with min_position, retried while the server answers
    503 (projections not caught up within its bounded wait)."""
    from engramlog_client import EngramlogError

    deadline = time.monotonic() + FIRST_QUERY_DEADLINE_S
    while True:
        try:
            return _ask(client, query, k, agent_id, trace, multi, min_position, reference_time)
        except EngramlogError as exc:
            if exc.status != 503 or time.monotonic() > deadline:
                raise


def run_locomo(api_url: str, data: Path, convs: list[str], k: int, output: Path | None, api_key: str | None,
               console: Console, attribution: bool = False, gate: bool = False,
               multi: bool = False, folds: bool = False) -> dict[str, Any]:
    from engramlog_client import Engramlog

    conversations = load_conversations(data, convs)
    run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)
    info = machine()
    # --folds asks with trace too: each question's gate channels and judged ranking are recorded, so the gate's
    # floors can be chosen on six conversations and replayed on the other two (bench/locomo_folds.py).
    trace = True if attribution or folds else None
    mode = ("salience gate ON (no must_keep)" if gate else "must_keep (gate bypassed)") + (
        " · via recall/multi (memories domain)" if multi else "")
    console.print(f"[bold]LoCoMo[/bold] {data} · {len(conversations)} conversations · k={k} · run {run_id} · "
                  f"ingest: {mode}" + (" · attribution" if attribution else ""))
    console.print(f"machine: {info.get('cpus')} CPUs ({info.get('cpu_model', info.get('processor'))}), "
                  f"{info.get('memory_gib', '?')} GiB, {info['platform']}, Python {info['python']}")

    per_question: list[dict[str, Any]] = []
    client_ms: list[float] = []
    server_ms: list[float] = []
    ingest: dict[str, Any] = {}
    # A governed batch of a conversation's turns (up to 1,000) took 167 s on 2 busy cores: a shorter per-attempt
    # timeout retried it while the first attempt still held its scope, and the retries were refused Busy.
    with Engramlog(api_url, api_key=api_key, timeout=900.0) as client:
        # 1. Ingest every conversation (the projections work meanwhile).
        last_position = 0
        started = time.perf_counter()
        holders: dict[str, dict[str, str | None]] = {}
        dia_of: dict[str, str] = {}
        dispositions: dict[str, int] = {}
        evidence_kept: dict[str, int] = {"active": 0, "held": 0, "all": 0}
        for conv in conversations:
            position, seconds, holders[conv.sample_id], per_turn, written = _ingest(client, run_id, conv,
                                                                                    must_keep=not gate)
            dia_of.update(written)
            counts: dict[str, int] = {}
            for d in per_turn.values():
                counts[d] = counts.get(d, 0) + 1
                dispositions[d] = dispositions.get(d, 0) + 1
            for dia_id in {d for q in conv.questions if q.category in SCORED_CATEGORIES for d in q.evidence}:
                evidence_kept["all"] += 1
                evidence_kept["active"] += per_turn.get(dia_id) == "active"
                evidence_kept["held"] += holders[conv.sample_id].get(dia_id) is not None
            last_position = max(last_position, position)
            console.print(f"  ingested {conv.sample_id}: {len(conv.turns)} turns in {seconds:.1f}s "
                          f"({', '.join(f'{n} {d}' for d, n in sorted(counts.items()))})")
        write_s = time.perf_counter() - started
        total_turns = sum(len(c.turns) for c in conversations)
        ingest = {"memories": total_turns, "write_s": round(write_s, 3),
                  "memories_per_s": round(total_turns / write_s, 1) if write_s else None,
                  "last_position": last_position, "must_keep": not gate, "dispositions": dispositions,
                  # The gate's two duties: keep what questions need, decline filler.
                  "evidence_turns": evidence_kept["all"],
                  "evidence_admitted_active": round(evidence_kept["active"] / max(1, evidence_kept["all"]), 4),
                  "evidence_held_active": round(evidence_kept["held"] / max(1, evidence_kept["all"]), 4),
                  "turns_not_kept_active": round(1 - dispositions.get("active", 0) / max(1, total_turns), 4)}

        # Questions are asked of the whole corpus, vectors included (read-your-writes alone would let the first
        # questions run on the keyword leg).
        projected_s = wait_projected(client, last_position, timeout_s=FIRST_QUERY_DEADLINE_S, poll_s=0.2)
        ingest["all_projected_after_s"] = round(projected_s, 3)

        # 2. Ask. The first query of each conversation carries min_position = the last write of the run, so
        #    nothing is asked before every projection has applied every memory; those queries are scored but
        #    left out of the latency figures (they include the wait).
        asked = 0
        total_q = sum(1 for c in conversations for q in c.questions
                      if q.category == ABSTAIN_CATEGORY or (q.category in SCORED_CATEGORIES and q.evidence))
        gate_floors: dict[str, float] = {}
        for conv in conversations:
            agent_id = f"locomo-{run_id}-{conv.sample_id}"
            # The clock a question's time words are read against: the conversation's latest session date (the
            # data gives no date per question; the questions are asked after the last session).
            now = max(t["occurred_at"] for t in conv.turns)
            first = True
            for q in conv.questions:
                scored = q.category in SCORED_CATEGORIES and bool(q.evidence)
                if not scored and q.category != ABSTAIN_CATEGORY:
                    continue
                t0 = time.perf_counter()
                if first:
                    answer = _recall_waiting(client, q.question, k, agent_id, last_position, trace, multi, now)
                    wait_s = time.perf_counter() - started - write_s
                    if "queryable_after_s" not in ingest:
                        ingest["queryable_after_s"] = round(wait_s, 3)
                else:
                    answer = _ask(client, q.question, k, agent_id, trace, multi, reference_time=now)
                elapsed_ms = (time.perf_counter() - t0) * 1000
                if not first:
                    client_ms.append(elapsed_ms)
                    server_ms.append(float(answer["latency_ms"]))
                results = answer["results"]
                ranked = [str(r["metadata"].get("dia_id")) for r in results]
                record: dict[str, Any] = {
                    "sample_id": conv.sample_id, "qa_index": q.index, "category": q.category,
                    "evidence": list(q.evidence), "returned": ranked,
                    "scores_returned": [r["score"] for r in results], "client_ms": round(elapsed_ms, 2),
                    "server_ms": answer["latency_ms"], "waited_for_projections": first,
                    "abstained": answer.get("abstained") is not None,
                }
                if answer.get("abstained"):  # the channels' votes only: the reason quotes the dataset's names
                    record["abstain_channels"] = {name: c.get("relevant") for name, c in
                                                  answer["abstained"].get("channels", {}).items()}
                if folds and not multi:
                    record["gate"] = _gate_record(answer, dia_of, gate_floors)
                time_target = (answer.get("explanation") or {}).get("query", {}).get("time")
                if time_target:
                    record["time"] = {"start": time_target["start"], "end": time_target["end"]}
                if scored:
                    record["scores"] = score_question(ranked, q.evidence)
                    if attribution:
                        gold = [holders[conv.sample_id].get(d) for d in q.evidence]
                        stage, stages = attribute(gold, answer["details"].get("trace", {}),
                                                  [str(r["memory_id"]) for r in results])
                        record["attribution"] = {"stage": stage, "gold_stages": stages}
                per_question.append(record)
                first = False
                asked += 1
                if asked % 200 == 0:
                    console.print(f"  asked {asked}/{total_q}")

    report = summarise(per_question)
    report.update({
        "run_id": run_id, "recorded_at": datetime.now(UTC).isoformat(), "api_url": api_url, "data": str(data),
        "conversations": [c.sample_id for c in conversations], "k": k, "machine": info, "ingest": ingest,
        "mode": {"gate": gate, "attribution": attribution, "via": "/v1/recall/multi" if multi else "/v1/recall",
                 "reference_time": "each conversation's latest session date" if not multi else None},
        "gate_floors": gate_floors,
        "latency_ms": {
            "queries": len(client_ms),
            "client_p50": round(percentile(client_ms, 50), 2), "client_p95": round(percentile(client_ms, 95), 2),
            "server_p50": round(percentile(server_ms, 50), 2), "server_p95": round(percentile(server_ms, 95), 2),
            "note": "client: wall time of POST /v1/recall over HTTP; server: the answer's latency_ms. "
                    "The first query of each conversation (min_position wait) is left out.",
        },
        "baselines": BASELINES, "baselines_source": "../shared/eval/README.md",
        "questions": per_question,
    })
    print_report(report, console)
    if folds:
        report["folds"] = out_of_fold(per_question, [c.sample_id for c in conversations], gate_floors)
        console.print("[bold]out of fold[/bold] (bench/locomo_folds.py: hold out each pair, choose on the other six)")
        for line in fold_lines(report["folds"]):
            console.print(line, highlight=False)
    summary_path, dump_path = save_report(report, output or RESULTS_DIR / f"locomo-{run_id.split('-')[0]}-summary.json")
    console.print(f"saved {summary_path} (per-question dump: {dump_path})")
    return report


def _gate_record(answer: dict[str, Any], dia_of: dict[str, str], floors: dict[str, float]) -> dict[str, Any]:
    """The abstention gate as it judged this question: its channels' votes and values, its quorum and veto, and
    the ranking it judged (as dia_ids, returned or not). Fills `floors` with the run's own (the server's)."""
    stages = (answer.get("explanation") or {}).get("stages", [])
    stage: dict[str, Any] = next((s for s in stages if s.get("stage") == "abstain"), {})
    config, notes = stage.get("config", {}), stage.get("notes", {})
    for name, key in (("vector", "sim_floor"), ("keyword", "term_floor"), ("relevance", "relevance_floor")):
        if key in config:
            floors.setdefault(name, float(config[key]))
    ranked = [dia_of.get(m, "?") for m in (answer.get("details") or {}).get("trace", {}).get("ranked", [])]
    return {"channels": notes.get("channels", {}), "values": notes.get("values", {}),
            "quorum": config.get("quorum", 0.5), "veto": config.get("veto", []), "ranked": ranked}


def summary_of(report: dict[str, Any], dump: Path | None = None) -> dict[str, Any]:
    """The report without its per-question list (about 1 MB a run); `questions_file` names where that list is."""
    summary = {k: v for k, v in report.items() if k != "questions"}
    summary["questions"] = len(report.get("questions") or [])
    if dump is not None:
        summary["questions_file"] = str(dump.relative_to(RESULTS_DIR)) if dump.is_relative_to(RESULTS_DIR) \
            else str(dump)
    return summary


def save_report(report: dict[str, Any], summary_path: Path) -> tuple[Path, Path]:
    """The small summary at `summary_path` (committed), the whole report with every question in RUNS_DIR
    (git-ignored, kept on the machine that ran it). Answers both paths."""
    stem = summary_path.stem.removesuffix("-summary")
    dump_path = RUNS_DIR / f"{stem}.json"
    dump_path.parent.mkdir(parents=True, exist_ok=True)
    dump_path.write_text(json.dumps(report, indent=1, default=str))
    summary_path.parent.mkdir(parents=True, exist_ok=True)
    summary_path.write_text(json.dumps(summary_of(report, dump_path), indent=1, default=str))
    return summary_path, dump_path



# What other modules import from here (the data, scoring and printing live in locomo_data, locomo_metrics and
# locomo_report; this module runs the evaluation and saves its report).
__all__ = [
    "ABSTAIN_CATEGORY", "ATTRIBUTION_STAGES", "BASELINES", "BATCH", "CATEGORY_NAMES", "CUTOFFS",
    "FIRST_QUERY_DEADLINE_S", "LABELS", "METRICS", "RESULTS_DIR", "RUNS_DIR", "SCORED_CATEGORIES", "STAGE_LABELS",
    "Conversation", "Question", "aggregate", "attribute", "attribution_totals", "dedupe", "hit_at",
    "load_conversations", "locate", "mrr_at", "ndcg_at", "normalise_evidence", "parse_session_date", "percentile",
    "print_attribution", "print_report", "recall_at", "run_locomo", "save_report", "score_question", "summarise",
    "summary_of", "turn_content",
]
