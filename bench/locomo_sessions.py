"""LoCoMo (dev split) as session messages: R@10 of the sessions domain beside the memories domain's.

Each conversation is one session (POST /v1/sessions/{id}/messages, its turns in order, message_id = the turn's
dia_id, the first speaker as `user`, the other as `assistant`); each scored question goes to POST /v1/recall/multi
with domains ["sessions"] and the session as scope. The ranked list is each result's hit messages (best first;
the ±window around them is context, not a hit), deduplicated: scored like the memories run (bench/locomo.py's
recall@k, hit@k, MRR, nDCG).

    python -m bench.locomo_sessions --api-url http://127.0.0.1:8000 [--data ../shared/eval/locomo/locomo_dev.json]
"""

from __future__ import annotations

import argparse
import secrets
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from engramlog_client import Engramlog
from rich.console import Console

from bench.common import machine, save_result, wait_projected
from bench.locomo import SCORED_CATEGORIES, aggregate, dedupe, load_conversations, score_question

BATCH = 500


def _ingest(http: httpx.Client, session_id: str, turns: list[dict[str, Any]]) -> int:
    speakers: list[str] = []
    last = 0
    for start in range(0, len(turns), BATCH):
        messages = []
        for t in turns[start:start + BATCH]:
            speaker = t["content"].split(":", 1)[0]
            if speaker not in speakers:
                speakers.append(speaker)
            messages.append({"message_id": t["dia_id"], "role": "user" if speaker == speakers[0] else "assistant",
                             "content": t["content"], "created_at": t["occurred_at"].isoformat(),
                             "metadata": {"dia_id": t["dia_id"]}})
        r = http.post(f"/v1/sessions/{session_id}/messages", json={"messages": messages})
        r.raise_for_status()
        last = max(last, r.json()["position"])
    return last


def run(api_url: str, data: Path, k: int, console: Console) -> dict[str, Any]:
    conversations = load_conversations(data)
    run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)
    hits_only: list[dict[str, float]] = []
    server_ms: list[float] = []
    with httpx.Client(base_url=api_url, timeout=120) as http:
        started = time.perf_counter()
        last = 0
        for conv in conversations:
            last = max(last, _ingest(http, f"locomo-{run_id}-{conv.sample_id}", conv.turns))
        write_s = time.perf_counter() - started
        with Engramlog(api_url, timeout=120.0) as client:  # the projections' progress as the SDK reads it
            projected_s = wait_projected(client, last, timeout_s=900, poll_s=0.2)
        console.print(f"ingested {sum(len(c.turns) for c in conversations)} turns as session messages in "
                      f"{write_s:.1f}s, projected {projected_s:.1f}s later")
        for conv in conversations:
            session_id = f"locomo-{run_id}-{conv.sample_id}"
            for q in conv.questions:
                if q.category not in SCORED_CATEGORIES or not q.evidence:
                    continue
                r = http.post("/v1/recall/multi", json={"query": q.question, "domains": ["sessions"], "k": k,
                                                        "session_id": session_id})
                r.raise_for_status()
                body = r.json()
                server_ms.append(body["latency_ms"])
                [bucket] = body["buckets"]
                ranked = dedupe([h["message_id"] for res in bucket["results"]
                                 for h in sorted(res["fields"]["hits"], key=lambda h: -h["score"])])
                hits_only.append(score_question(ranked, q.evidence))
    server_ms.sort()
    return {"run_id": run_id, "data": str(data), "k": k, "questions": len(hits_only),
            "sessions_domain": {"hits": aggregate(hits_only)},
            "ingest": {"write_s": round(write_s, 2), "projected_after_s": round(projected_s, 2)},
            "server_ms_p50": server_ms[len(server_ms) // 2] if server_ms else None, "machine": machine(),
            "notes": "R@k of the sessions domain through POST /v1/recall/multi (domains [sessions], the "
                     "conversation's session as scope); 'hits' ranks each result's hit messages (the windows around "
                     "them are context, not counted)."}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--api-url", default="http://127.0.0.1:8000")
    parser.add_argument("--data", type=Path, default=Path("../shared/eval/locomo/locomo_dev.json"))
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    console = Console()
    result = run(args.api_url, args.data, args.k, console)
    for name, scores in result["sessions_domain"].items():
        console.print(f"sessions domain ({name}): " + ", ".join(f"{m} {v:.3f}" for m, v in scores.items()))
    console.print(f"saved {save_result('locomo-sessions', result, args.output)}")


if __name__ == "__main__":
    main()
