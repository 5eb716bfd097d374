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

The scoring and normalisation functions at the top are pure, so they are unit-tested on toy examples
(tests/test_bench_locomo.py). The saved JSON holds ids, categories and scores only, never the dataset's text
(CC BY-NC: the data stays in ../shared/eval/). A run saves its summary (every figure, no per-question list) as
bench/results/locomo-<stamp>-summary.json, committed, and the whole report with each question's ranking as
bench/results/runs/locomo-<stamp>.json (about 1 MB, git-ignored).
"""

from __future__ import annotations

import json
import math
import re
import secrets
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.common import RESULTS_DIR, machine, percentile, wide

CUTOFFS = (1, 5, 10)
SCORED_CATEGORIES = (1, 2, 3, 4)
ABSTAIN_CATEGORY = 5
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
BATCH = 1000  # POST /v1/memories/batch takes at most 1,000 memories
RUNS_DIR = RESULTS_DIR / "runs"  # per-question dumps of each run: git-ignored (.gitignore), the summaries are committed
FIRST_QUERY_DEADLINE_S = 600.0

# From ../shared/eval/README.md (dev split, 1,224 questions, categories 1-4, same protocol, 2-core machine).
BASELINES: list[dict[str, Any]] = [
    {"system": "BM25 (bm25s, Lucene, k1 1.5, stopwords + Snowball)", "r@1": .276, "r@5": .476, "r@10": .555,
     "hit@10": .621, "mrr@10": .403, "ndcg@10": .423, "p50_ms": 0.3},
    {"system": "dense, all-MiniLM-L6-v2, exact cosine", "r@1": .168, "r@5": .381, "r@10": .466,
     "hit@10": .525, "mrr@10": .295, "ndcg@10": .321, "p50_ms": 25},
    {"system": "hybrid recipe (BM25 ∪ dense top-50; 0.6·cos + 0.4·minmax BM25)", "r@1": .293, "r@5": .529,
     "r@10": .618, "hit@10": .686, "mrr@10": .441, "ndcg@10": .466, "p50_ms": 27},
    {"system": "reciprocal rank fusion, k = 60", "r@1": .235, "r@5": .467, "r@10": .554, "hit@10": .623,
     "mrr@10": .381, "ndcg@10": .403, "p50_ms": 25},
    {"system": "MemPalace 3.11.0 (default search, MiniLM)", "r@1": .228, "r@5": .447, "r@10": .530,
     "hit@10": .597, "mrr@10": .360, "ndcg@10": .386, "p50_ms": 100},
    {"system": "Mem0 2.2.1 OSS, infer=False", "r@1": .168, "r@5": .381, "r@10": .466, "hit@10": .525,
     "mrr@10": .295, "ndcg@10": .321, "p50_ms": 39},
]


# ---------------------------------------------------------------------------------------------------------
# Pure functions: parsing, normalisation, scoring.

_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")


def parse_session_date(value: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> 2023-05-08 13:56 UTC (LoCoMo gives no zone; UTC keeps it stable)."""
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_content(turn: dict[str, Any]) -> str:
    """The protocol's memory text for a turn: '<speaker>: <text>'."""
    return f"{turn['speaker']}: {turn['text']}"


def normalise_evidence(evidence: Iterable[str], known: set[str] | frozenset[str]) -> list[str]:
    """Gold dia_ids in canonical form, in order, without repeats, keeping only ids present in the conversation.

    Entries holding several ids are split ('D8:6; D9:17'); a stray colon is dropped ('D:11:26' -> 'D11:26');
    leading zeros are dropped ('D30:05' -> 'D30:5'); anything else that is not a known id ('D') is dropped.
    """
    out: list[str] = []
    for entry in evidence:
        for part in re.split(r"[;,\s]+", str(entry)):
            match = _EVIDENCE_ID.fullmatch(part.strip())
            if not match:
                continue
            dia_id = f"D{int(match[1])}:{int(match[2])}"
            if dia_id in known and dia_id not in out:
                out.append(dia_id)
    return out


def dedupe(ranked: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    return [x for x in ranked if not (x in seen or seen.add(x))]  # type: ignore[func-returns-value]


def recall_at(ranked: Sequence[str], relevant: Sequence[str], k: int) -> float:
    """Share of the relevant ids found in the top k."""
    if not relevant:
        return 0.0
    top = set(dedupe(ranked)[:k])
    return sum(1 for r in set(relevant) if r in top) / len(set(relevant))


def hit_at(ranked: Sequence[str], relevant: Sequence[str], k: int) -> float:
    """1 when any relevant id is in the top k."""
    rel = set(relevant)
    return 1.0 if any(r in rel for r in dedupe(ranked)[:k]) else 0.0


def mrr_at(ranked: Sequence[str], relevant: Sequence[str], k: int = 10) -> float:
    """Reciprocal rank of the first relevant id within the top k (0 when none)."""
    rel = set(relevant)
    for rank, item in enumerate(dedupe(ranked)[:k], start=1):
        if item in rel:
            return 1.0 / rank
    return 0.0


def ndcg_at(ranked: Sequence[str], relevant: Sequence[str], k: int = 10) -> float:
    """Binary-relevance nDCG@k: DCG of the ranking over the DCG of an ideal one with every relevant id first."""
    rel = set(relevant)
    if not rel:
        return 0.0
    dcg = sum(1.0 / math.log2(rank + 1) for rank, item in enumerate(dedupe(ranked)[:k], start=1) if item in rel)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(rel), k) + 1))
    return dcg / ideal


def score_question(ranked: Sequence[str], relevant: Sequence[str]) -> dict[str, float]:
    scores = {}
    for k in CUTOFFS:
        scores[f"r@{k}"] = recall_at(ranked, relevant, k)
    for k in CUTOFFS:
        scores[f"hit@{k}"] = hit_at(ranked, relevant, k)
    scores["mrr@10"] = mrr_at(ranked, relevant, 10)
    scores["ndcg@10"] = ndcg_at(ranked, relevant, 10)
    return scores


METRICS = ("r@1", "r@5", "r@10", "hit@1", "hit@5", "hit@10", "mrr@10", "ndcg@10")
LABELS = {"r@1": "R@1", "r@5": "R@5", "r@10": "R@10", "hit@1": "hit@1", "hit@5": "hit@5", "hit@10": "hit@10",
          "mrr@10": "MRR@10", "ndcg@10": "nDCG@10"}


def aggregate(scores: Sequence[dict[str, float]]) -> dict[str, float]:
    """Micro-average: the mean of each metric over questions, and their count."""
    out: dict[str, float] = {"n": len(scores)}
    for metric in METRICS:
        out[metric] = sum(s[metric] for s in scores) / len(scores) if scores else 0.0
    return out


ATTRIBUTION_STAGES = ("found", "abstained", "cut_at_rerank", "cut_by_composite", "never_candidate", "not_kept")
STAGE_LABELS = {"found": "found (top k)", "abstained": "abstained", "cut_at_rerank": "cut at rerank",
                "cut_by_composite": "cut by the composite", "never_candidate": "never a candidate",
                "not_kept": "not kept (salience gate)"}


def locate(memory_id: str | None, trace: dict[str, Sequence[str]], returned: Sequence[str]) -> str:
    """The last funnel stage one gold memory reached (None: the write did not keep it as a memory)."""
    if memory_id is None:
        return "not_kept"
    if memory_id in returned:
        return "found"
    if memory_id in trace.get("ranked", ()):
        return "abstained"
    if memory_id in trace.get("pool", ()):
        return "cut_at_rerank"
    if memory_id in trace.get("candidates", ()):
        return "cut_by_composite"
    return "never_candidate"


def attribute(gold: Sequence[str | None], trace: dict[str, Sequence[str]],
              returned: Sequence[str]) -> tuple[str, list[str]]:
    """(the question's stage: its best-placed gold memory's, each gold memory's stage)."""
    stages = [locate(g, trace, returned) for g in gold]
    if not stages:
        return "never_candidate", []
    return min(stages, key=ATTRIBUTION_STAGES.index), stages


def attribution_totals(per_question: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts and shares per stage, over questions and over gold memories (questions asked with a trace)."""
    traced = [q for q in per_question if "attribution" in q]
    by_question = {s: sum(1 for q in traced if q["attribution"]["stage"] == s) for s in ATTRIBUTION_STAGES}
    items = [s for q in traced for s in q["attribution"]["gold_stages"]]
    by_item = {s: items.count(s) for s in ATTRIBUTION_STAGES}
    n_items = len(items)
    reached_pool = sum(by_item[s] for s in ("found", "abstained", "cut_at_rerank"))
    candidates = n_items - by_item["never_candidate"] - by_item["not_kept"]
    return {
        "questions": len(traced), "by_question": by_question, "gold_memories": n_items, "by_gold_memory": by_item,
        "gold_candidate_share": candidates / n_items if n_items else None,
        "gold_reached_pool_share": reached_pool / n_items if n_items else None,
    }


# ---------------------------------------------------------------------------------------------------------
# Dataset


@dataclass(frozen=True)
class Question:
    index: int  # position in the conversation's qa list
    category: int
    question: str
    evidence: tuple[str, ...]  # normalised


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: list[dict[str, Any]]  # {dia_id, content, occurred_at, session}
    questions: list[Question]


def load_conversations(data: Path, wanted: Sequence[str] = ()) -> list[Conversation]:
    raw = json.loads(data.read_text())
    by_id = {c["sample_id"]: c for c in raw}
    unknown = [w for w in wanted if w not in by_id]
    if unknown:
        raise ValueError(f"unknown sample ids {unknown}; the file holds {sorted(by_id)}")
    out = []
    for sample in raw:
        if wanted and sample["sample_id"] not in wanted:
            continue
        conv = sample["conversation"]
        sessions = sorted((int(m[1]), key) for key in conv if (m := _SESSION.fullmatch(key)))
        turns = []
        for number, key in sessions:
            when = parse_session_date(conv[f"{key}_date_time"])
            for turn in conv[key]:
                turns.append({"dia_id": turn["dia_id"], "content": turn_content(turn), "occurred_at": when,
                              "session": number})
        known = frozenset(t["dia_id"] for t in turns)
        questions = [Question(i, int(q["category"]), q["question"],
                              tuple(normalise_evidence(q.get("evidence") or [], known)))
                     for i, q in enumerate(sample["qa"])]
        out.append(Conversation(sample["sample_id"], turns, questions))
    return out


# ---------------------------------------------------------------------------------------------------------
# The run


def _ingest(client: Any, run_id: str, conv: Conversation, must_keep: bool = True
            ) -> tuple[int, float, dict[str, str | None], dict[str, str]]:
    """Write a conversation's turns. Answers the last position, the seconds taken, each dia_id's memory (the
    memory holding the turn: itself, or the one it reinforced; None when the gate discarded or staged it) and
    each dia_id's disposition (active, staging, discard or reinforced)."""
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
    return last, time.perf_counter() - started, holder, dispositions


def _ask(client: Any, query: str, k: int, agent_id: str, trace: bool | None, multi: bool,
         min_position: int | None = None) -> dict[str, Any]:
    """One question: POST /v1/recall, or (multi) the memories domain through POST /v1/recall/multi, its bucket
    answered in /v1/recall's shape (metadata, latency, abstained)."""
    if not multi:
        return client.recall(query, k=k, agent_id=agent_id, min_position=min_position,
                             trace=trace).model_dump(mode="json")
    out = client.recall_multi(query, domains=["memories"], k=k, agent_id=agent_id,
                              min_position=min_position).model_dump(mode="json")
    [bucket] = out["buckets"]
    reason = bucket.get("reason") or ""
    return {"recall_id": out["recall_id"], "latency_ms": out["latency_ms"], "details": {},
            "abstained": {"reason": reason, "channels": {}} if reason.startswith("abstained") else None,
            "results": [{"memory_id": r["memory_id"], "content": r["content"], "score": r["score"],
                         "metadata": r["fields"].get("metadata", {})} for r in bucket["results"]]}


def _recall_waiting(client: Any, query: str, k: int, agent_id: str, min_position: int,
                    trace: bool | None = None, multi: bool = False) -> dict[str, Any]:
    """The first query of a conversation: read-your-writes with min_position, retried while the server answers
    503 (projections not caught up within its bounded wait)."""
    from engramlog_client import EngramlogError

    deadline = time.monotonic() + FIRST_QUERY_DEADLINE_S
    while True:
        try:
            return _ask(client, query, k, agent_id, trace, multi, min_position)
        except EngramlogError as exc:
            if exc.status != 503 or time.monotonic() > deadline:
                raise


def _wait_projected(client: Any, position: int, timeout_s: float = FIRST_QUERY_DEADLINE_S) -> float:
    """Seconds until every projection has applied `position`: questions are asked of the whole corpus, vectors
    included (read-your-writes alone would let the first questions run on the keyword leg)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        # A projection's position is the last event of its own types it applied: caught up is no lag left.
        if all(p.position >= position or p.lag_events == 0 for p in client.projections()):
            break
        time.sleep(0.2)
    return time.monotonic() - started


def run_locomo(api_url: str, data: Path, convs: list[str], k: int, output: Path | None, api_key: str | None,
               console: Console, attribution: bool = False, gate: bool = False,
               multi: bool = False) -> dict[str, Any]:
    from engramlog_client import Engramlog

    conversations = load_conversations(data, convs)
    run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)
    info = machine()
    trace = True if attribution else None
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
    with Engramlog(api_url, api_key=api_key, timeout=60.0) as client:
        # 1. Ingest every conversation (the projections work meanwhile).
        last_position = 0
        started = time.perf_counter()
        holders: dict[str, dict[str, str | None]] = {}
        dispositions: dict[str, int] = {}
        evidence_kept: dict[str, int] = {"active": 0, "held": 0, "all": 0}
        for conv in conversations:
            position, seconds, holders[conv.sample_id], per_turn = _ingest(client, run_id, conv, must_keep=not gate)
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

        ingest["all_projected_after_s"] = round(_wait_projected(client, last_position), 3)

        # 2. Ask. The first query of each conversation carries min_position = the last write of the run, so
        #    nothing is asked before every projection has applied every memory; those queries are scored but
        #    left out of the latency figures (they include the wait).
        asked = 0
        total_q = sum(1 for c in conversations for q in c.questions
                      if q.category == ABSTAIN_CATEGORY or (q.category in SCORED_CATEGORIES and q.evidence))
        for conv in conversations:
            agent_id = f"locomo-{run_id}-{conv.sample_id}"
            first = True
            for q in conv.questions:
                scored = q.category in SCORED_CATEGORIES and bool(q.evidence)
                if not scored and q.category != ABSTAIN_CATEGORY:
                    continue
                t0 = time.perf_counter()
                if first:
                    answer = _recall_waiting(client, q.question, k, agent_id, last_position, trace, multi)
                    wait_s = time.perf_counter() - started - write_s
                    if "queryable_after_s" not in ingest:
                        ingest["queryable_after_s"] = round(wait_s, 3)
                else:
                    answer = _ask(client, q.question, k, agent_id, trace, multi)
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
        "mode": {"gate": gate, "attribution": attribution, "via": "/v1/recall/multi" if multi else "/v1/recall"},
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
    summary_path, dump_path = save_report(report, output or RESULTS_DIR / f"locomo-{run_id.split('-')[0]}-summary.json")
    console.print(f"saved {summary_path} (per-question dump: {dump_path})")
    return report


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


def summarise(per_question: Sequence[dict[str, Any]]) -> dict[str, Any]:
    scored = [q for q in per_question if "scores" in q]
    by_category = {str(c): aggregate([q["scores"] for q in scored if q["category"] == c])
                   for c in SCORED_CATEGORIES if any(q["category"] == c for q in scored)}
    adversarial = [q for q in per_question if q["category"] == ABSTAIN_CATEGORY]
    abstained = [q for q in adversarial if not q["returned"]]
    top_adv = [q["scores_returned"][0] for q in adversarial if q["scores_returned"]]
    top_scored = [q["scores_returned"][0] for q in scored if q["scores_returned"]]
    wrongly = [q for q in scored if not q["returned"]]
    abstained_by_category = {str(c): _share([q for q in scored if q["category"] == c]) for c in SCORED_CATEGORIES
                             if any(q["category"] == c for q in scored)}
    out = {
        "overall": aggregate([q["scores"] for q in scored]),
        "by_category": by_category,
        "answerable_abstained": {"n": len(scored), "abstained": len(wrongly),
                                 "rate": len(wrongly) / len(scored) if scored else None,
                                 "by_category": abstained_by_category},
        "category_5": {
            "n": len(adversarial), "abstained": len(abstained),
            "abstain_rate": len(abstained) / len(adversarial) if adversarial else None,
            "mean_results": sum(len(q["returned"]) for q in adversarial) / len(adversarial) if adversarial else None,
            "top_score_p50": percentile(top_adv, 50) if top_adv else None,
            "top_score_p50_categories_1_4": percentile(top_scored, 50) if top_scored else None,
        },
    }
    if any("attribution" in q for q in per_question):
        out["attribution"] = attribution_totals(per_question)
    return out


def _share(questions: Sequence[dict[str, Any]]) -> float:
    """Share of `questions` answered with no result (abstained)."""
    return sum(1 for q in questions if not q["returned"]) / len(questions) if questions else 0.0


def _f(x: float) -> str:
    return f"{x:.3f}".lstrip("0") if 0 <= x < 1 else f"{x:.3f}"


def print_report(report: dict[str, Any], console: Console) -> None:
    console = wide(console)  # a log file or a pipe: do not wrap the tables
    table = Table(title="LoCoMo retrieval (categories 1-4, micro-averaged over questions)")
    table.add_column("category", no_wrap=True)
    table.add_column("n", justify="right")
    for metric in METRICS:
        table.add_column(LABELS[metric], justify="right")
    table.add_column("abstained", justify="right")
    wrong = report.get("answerable_abstained", {})
    for cat, agg in report["by_category"].items():
        table.add_row(f"{cat} {CATEGORY_NAMES[int(cat)]}", str(agg["n"]), *(_f(agg[m]) for m in METRICS),
                      f"{wrong.get('by_category', {}).get(cat, 0):.1%}")
    overall = report["overall"]
    table.add_row("[bold]overall[/bold]", str(overall["n"]), *(f"[bold]{_f(overall[m])}[/bold]" for m in METRICS),
                  f"[bold]{wrong.get('rate') or 0:.1%}[/bold] (wrongly)")
    c5 = report["category_5"]
    if c5["n"]:
        table.add_row(f"{ABSTAIN_CATEGORY} {CATEGORY_NAMES[ABSTAIN_CATEGORY]}", str(c5["n"]), *("" for _ in METRICS),
                      f"[bold]{c5['abstain_rate']:.1%}[/bold] (rightly)")
    console.print(table)
    if c5["n"]:
        console.print(f"abstention: {c5['abstain_rate']:.1%} of category-5 (adversarial) questions abstained "
                      f"({c5['abstained']}/{c5['n']}); {wrong.get('rate') or 0:.1%} of answerable questions wrongly "
                      f"abstained ({wrong.get('abstained', 0)}/{wrong.get('n', 0)})")
    if report.get("attribution"):
        print_attribution(report["attribution"], console)

    lat = report["latency_ms"]
    compare = Table(title="Against the baselines (../shared/eval/README.md)")
    for col in ("system", "R@1", "R@5", "R@10", "hit@10", "MRR@10", "nDCG@10", "query p50"):
        compare.add_column(col, justify="left" if col == "system" else "right")
    for b in report["baselines"]:
        compare.add_row(b["system"], *(_f(b[m]) for m in ("r@1", "r@5", "r@10", "hit@10", "mrr@10", "ndcg@10")),
                        f"{b['p50_ms']:g} ms")
    compare.add_row("[bold]engramlog (this run)[/bold]",
                    *(f"[bold]{_f(overall[m])}[/bold]" for m in ("r@1", "r@5", "r@10", "hit@10", "mrr@10",
                                                                  "ndcg@10")),
                    f"[bold]{lat['server_p50']:.1f} ms[/bold]")
    console.print(compare)

    if c5["n"]:
        console.print(f"category 5 (adversarial, {c5['n']} questions): abstained {c5['abstained']} "
                      f"({c5['abstain_rate']:.1%}); mean results {c5['mean_results']:.1f}; top score p50 "
                      f"{c5['top_score_p50'] or 0:.3f} (categories 1-4: {c5['top_score_p50_categories_1_4'] or 0:.3f})")
    console.print(f"recall latency over {lat['queries']} queries: client p50 {lat['client_p50']:.1f} ms, "
                  f"p95 {lat['client_p95']:.1f} ms; server p50 {lat['server_p50']:.1f} ms, "
                  f"p95 {lat['server_p95']:.1f} ms")
    ing = report["ingest"]
    if ing.get("dispositions"):
        console.print(f"ingest ({'must_keep' if ing.get('must_keep') else 'salience gate on'}): "
                      + ", ".join(f"{n} {d}" for d, n in sorted(ing["dispositions"].items())))
        if "evidence_admitted_active" in ing:
            console.print(f"evidence turns admitted active: {ing['evidence_admitted_active']:.1%} "
                          f"(held by an active memory, reinforced included: {ing['evidence_held_active']:.1%}) of "
                          f"{ing['evidence_turns']}; all turns not kept active: {ing['turns_not_kept_active']:.1%}")
    console.print(f"ingest: {ing['memories']} memories in {ing['write_s']:.1f}s "
                  f"({ing['memories_per_s']}/s); queryable (all projections caught up) "
                  f"{ing.get('queryable_after_s', float('nan')):.1f}s after the last write")
    m = report["machine"]
    console.print(f"machine: {m.get('cpus')} CPUs, {m.get('cpu_model', '')}, {m['platform']}")


def print_attribution(totals: dict[str, Any], console: Console) -> None:
    """Where the gold evidence was lost, per question (its best-placed gold memory) and per gold memory."""
    table = Table(title=f"Attribution: the stage where gold evidence was lost ({totals['questions']} questions, "
                        f"{totals['gold_memories']} gold memories)")
    for col in ("stage", "questions", "share", "gold memories", "share "):
        table.add_column(col, justify="left" if col == "stage" else "right")
    nq, ni = totals["questions"] or 1, totals["gold_memories"] or 1
    for stage in ATTRIBUTION_STAGES:
        q, i = totals["by_question"][stage], totals["by_gold_memory"][stage]
        if stage == "not_kept" and not q and not i:
            continue
        table.add_row(STAGE_LABELS[stage], str(q), f"{q / nq:.1%}", str(i), f"{i / ni:.1%}")
    console.print(table)
    console.print(f"gold memories that were candidates: {totals['gold_candidate_share'] or 0:.1%}; that reached the "
                  f"rerank pool: {totals['gold_reached_pool_share'] or 0:.1%}")
