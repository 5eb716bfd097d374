"""The packed read of BM25 postings (recall/packed_bm25.py) against the SQL plan it replaces, alternated per question
on one store: the keyword leg alone (n 320 over active and staging, as the funnel's first pass asks), by how many
postings the question's terms hold, whether each answers the exact top 320 (what reading every posting answers:
the SQL plan walks past 50k postings, the packed read past PACKED_UP_TO), and the whole recall
(recall.service.recall, k 10, served latency and the leg's time within it). Alternating per question keeps the
machine's drift out of the comparison (runs minutes apart on these two cores differ by a third). Run it on a store
`bench.recall` built (an external DATABASE_URL, `--reuse`):

    python -m bench.packed_bm25 [--tenant bench] [--queries 100] [--output FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

BANDS = ((0, 10_000), (10_000, 20_000), (20_000, 35_000), (35_000, 50_000), (50_000, 100_000), (100_000, 10**12))
MODES = ("sql", "packed")


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50": round(statistics.median(ordered), 2), "mean": round(statistics.mean(ordered), 2),
            "p95": round(ordered[int(len(ordered) * 0.95)], 2)}


def run(tenant: str, n_queries: int, output: Path | None) -> dict[str, Any]:
    from bench.common import machine
    from bench.corpus import questions
    from domain.text import tokenize
    from infra.db import get_engine
    from infra.embedding import get_embedder
    from infra.settings import get_settings
    from recall import keyword
    from recall.funnel import candidates
    from recall.scope import Scope
    from recall.service import RecallRequest, recall

    engine, settings = get_engine(), get_settings()
    embedder = get_embedder(settings.embedding.embedding_model)
    k1, b = settings.keyword.bm25_k1, settings.keyword.memory_bm25_b
    packed_over = keyword.PACKED_OVER
    qs = questions(n_queries)

    def use(mode: str) -> None:
        keyword.PACKED_OVER = packed_over if mode == "packed" else 10**12

    leg: dict[str, list[float]] = defaultdict(list)
    banded: dict[tuple[str, int], list[float]] = defaultdict(list)
    exact_answers: Counter[str] = Counter()
    with engine.connect() as conn:
        for i, q in enumerate(qs):
            terms = tokenize(q)
            postings = keyword.term_postings(conn, keyword.MEMORY_KEYWORD, tenant, sorted(set(terms)))
            band = next(j for j, (lo, hi) in enumerate(BANDS) if lo < postings <= hi or (lo == 0 and postings == 0))
            use("sql")
            exact = keyword.bm25_top(conn, Scope(tenant), terms, 320, k1, b, ("active", "staging"), walk_over=10**12)
            answers = {}
            for mode in MODES if i % 2 else MODES[::-1]:
                use(mode)
                t0 = time.perf_counter()
                answers[mode] = keyword.bm25_top(conn, Scope(tenant), terms, 320, k1, b, ("active", "staging"))
                ms = (time.perf_counter() - t0) * 1000
                leg[mode].append(ms)
                banded[(mode, band)].append(ms)
            exact_answers.update(m for m in MODES if list(answers[m]) == list(exact))

    within: dict[str, float] = {}
    real_bm25_top = candidates.bm25_top

    def timed_bm25_top(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return real_bm25_top(*args, **kwargs)
        finally:
            within["ms"] = within.get("ms", 0.0) + (time.perf_counter() - t0) * 1000

    candidates.bm25_top = timed_bm25_top
    served: dict[str, list[float]] = defaultdict(list)
    in_recall: dict[str, list[float]] = defaultdict(list)

    def ask(q: str) -> Any:
        return recall(engine, embedder, settings, RecallRequest(Scope(tenant), q, 10), {})

    for q in qs[:5]:
        ask(q)
    for i, q in enumerate(qs):
        for mode in MODES if i % 2 else MODES[::-1]:
            use(mode)
            within.clear()
            served[mode].append(ask(q).latency_ms)
            in_recall[mode].append(within.get("ms", 0.0))
    candidates.bm25_top = real_bm25_top
    use("packed")

    result = {
        "bench": "packed_bm25", "machine": machine(), "tenant": tenant, "queries": len(qs),
        "leg": {m: _summary(leg[m]) for m in MODES}, "exact_top_320": {m: exact_answers[m] for m in MODES},
        "by_postings": [{"postings": f"{lo}-{hi}", "questions": len(banded[("sql", j)]),
                         **{m: _summary(banded[(m, j)]) for m in MODES}}
                        for j, (lo, hi) in enumerate(BANDS) if banded[("sql", j)]],
        "recall_served": {m: _summary(served[m]) for m in MODES},
        "leg_within_recall": {m: _summary(in_recall[m]) for m in MODES},
    }
    print(json.dumps(result, indent=1))
    if output:
        output.write_text(json.dumps(result, indent=1))
        print(f"saved {output}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenant", default="bench")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    run(args.tenant, args.queries, args.output)


if __name__ == "__main__":
    main()
