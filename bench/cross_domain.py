"""The cross-domain probe: does one relevance scale route questions to the right domain?

One tenant (bench/labelled.py stack: embedded PostgreSQL and Redis, the API app in process with default settings,
the projectors caught up by hand) holds memories, a knowledge library, sessions, transcripts and a code index
(bench/cross_domain_fixtures.py, a fixture of its own: the relevance scale was fitted on another,
bench/relevance_fixtures.py). Every question is asked through POST /v1/recall/multi with the default fan-out and
ceiling, twice (before and after the lazy vectors of what the first answers returned), then `--timing-rounds` more
times for latency only.

Reported, over the answerable questions of both passes:
- routed: the share whose fused top 1 (`results[0]`) comes from the domain meant to answer;
- answered: the share whose fused top 1 answers (bench/labelled.py's marker);
- the same two for a list fused by each bucket's raw `score` (what a client could do before `relevance`);
and over every result of every bucket: how many that do not answer reach relevance ≥ 0.8 (by domain, and the
questions where 3 of them would set off deep recall's shortcut), and how many answering ones do.
Latency: recall/multi's served latency_ms and the client's wall time, p50/p95, over the timing rounds.
Against a server without `relevance` (an older checkout, run with PYTHONPATH at it), the relevance figures are
absent and the score-fused ones and latency still come.

    python -m bench.cross_domain [--timing-rounds 3] [--output FILE]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from bench.common import latency_stats, machine, machine_line, save_result
from bench.cross_domain_fixtures import FIXTURE
from bench.labelled import DOMAINS, Fixture, answers, ask, load, stack

FLOOR = 0.8  # deep recall's shortcut floor (ENGRAMLOG_DEEP_SHORTCUT_SCORE)


def _by_score(answer: Any) -> list[tuple[str, Any]]:
    return sorted(((b.domain, r) for b in answer.buckets for r in b.results), key=lambda dr: -dr[1].score)


def quality(fixture: Fixture, asked: list[dict[str, Any]]) -> dict[str, Any]:
    has_relevance = any(getattr(a["answer"], "results", None) for a in asked)
    answerable = [a for a in asked if fixture.questions[a["question"]].domain]
    routed = answered = routed_score = answered_score = 0
    per_domain: dict[str, dict[str, int]] = {d: {"questions": 0, "routed": 0, "routed_by_score": 0} for d in DOMAINS}
    for a in answerable:
        q = fixture.questions[a["question"]]
        row = per_domain[q.domain or ""]
        row["questions"] += 1
        fused = list(getattr(a["answer"], "results", []) or [])
        if fused:
            top = fused[0]
            routed += top.domain == q.domain
            row["routed"] += top.domain == q.domain
            bucket = next(b for b in a["answer"].buckets if b.domain == top.domain)
            answered += answers(q, top.domain, bucket.results[top.rank - 1])  # with its fields (a window)
        by_score = _by_score(a["answer"])
        if by_score:
            domain, top_s = by_score[0]
            routed_score += domain == q.domain
            row["routed_by_score"] += domain == q.domain
            answered_score += answers(q, domain, top_s)
    results = unrelated_high = related_high = related = 0
    unrelated_by_domain = dict.fromkeys(DOMAINS, 0)
    shortcut_with_unrelated = 0
    examples: list[dict[str, Any]] = []
    for a in asked:
        q = fixture.questions[a["question"]]
        high_unrelated = 0
        for b in a["answer"].buckets:
            for r in b.results:
                results += 1
                good = answers(q, b.domain, r)
                related += good
                rel = getattr(r, "relevance", None)
                if rel is not None and rel >= FLOOR:
                    if good:
                        related_high += 1
                    else:
                        unrelated_high += 1
                        high_unrelated += 1
                        unrelated_by_domain[b.domain] += 1
                        examples.append({"query": q.query, "meant_for": q.domain, "domain": b.domain,
                                         "relevance": rel, "result": r.handle.get("qualified_name")
                                         or r.handle.get("heading_path") or r.content[:80]})
        shortcut_with_unrelated += high_unrelated >= 3
    n = max(1, len(answerable))
    out: dict[str, Any] = {
        "asks": len(asked), "answerable_asks": len(answerable),
        "by_score": {"routed": round(routed_score / n, 3), "answered": round(answered_score / n, 3)},
        "per_domain": per_domain, "results": results, "answering_results": related,
    }
    if has_relevance:
        out["by_relevance"] = {"routed": round(routed / n, 3), "answered": round(answered / n, 3)}
        out["unrelated_at_0_8"] = {"results": unrelated_high, "share_of_unrelated": round(
            unrelated_high / max(1, results - related), 4), "by_domain": unrelated_by_domain,
            "asks_with_3_or_more": shortcut_with_unrelated, "examples": examples}
        out["answering_at_0_8"] = related_high
    return out


def timing(client: Any, fixture: Fixture, rounds: int) -> dict[str, Any]:
    served, wall = [], []
    for _ in range(rounds):
        for a in ask(client, fixture, k=None, passes=1):
            served.append(a["answer"].latency_ms)
            wall.append(a["wall_ms"])
    return {"asks": len(served), "served_ms": latency_stats(served), "wall_ms": latency_stats(wall),
            "loadavg_1m_5m_15m": [round(x, 2) for x in os.getloadavg()]}


def run(rounds: int) -> dict[str, Any]:
    with stack() as client:
        print(machine_line(), flush=True)
        loads = load(client, FIXTURE)
        print(f"  loaded {loads}", flush=True)
        asked = ask(client, FIXTURE, k=None)
        latency = timing(client, FIXTURE, rounds)
    return {"bench": "cross_domain", "machine": machine(), "loads": loads, "quality": quality(FIXTURE, asked),
            "latency": latency}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timing-rounds", type=int, default=3)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    result = run(args.timing_rounds)
    q, lat = result["quality"], result["latency"]
    if "by_relevance" in q:
        print(f"fused by relevance: top 1 from the right domain {q['by_relevance']['routed']:.1%}, "
              f"answers {q['by_relevance']['answered']:.1%} ({q['answerable_asks']} answerable asks)")
        u = q["unrelated_at_0_8"]
        print(f"unrelated results >= {FLOOR}: {u['results']} of {q['results'] - q['answering_results']} "
              f"({u['share_of_unrelated']:.2%}) {u['by_domain']}; asks with >= 3 of them: {u['asks_with_3_or_more']};"
              f" answering results >= {FLOOR}: {q['answering_at_0_8']} of {q['answering_results']}")
    print(f"fused by raw score: top 1 from the right domain {q['by_score']['routed']:.1%}, "
          f"answers {q['by_score']['answered']:.1%}")
    print(f"recall/multi latency over {lat['asks']} asks: served p50 {lat['served_ms']['p50']} ms p95 "
          f"{lat['served_ms']['p95']} ms; wall p50 {lat['wall_ms']['p50']} p95 {lat['wall_ms']['p95']}; "
          f"load {lat['loadavg_1m_5m_15m']}")
    print(f"written: {save_result('cross-domain', result, args.output)}")


if __name__ == "__main__":
    main()
