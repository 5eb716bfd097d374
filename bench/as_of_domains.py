"""POST /v1/recall/multi latency over knowledge, sessions and transcripts: current vs as_of (recorded time) vs
since/until (valid time), in one run, on a fresh embedded stack (docs/recall.md, "Sections, chunks and messages as
of"). The memories' own figures: bench/as_of.py.

--documents documents of four `##` sections each, --messages session messages (in sessions of 50, created_at spread
over a year) and --transcripts transcripts of 40 turns are written; then every other document is re-put with two
sections changed and every transcript grown by 10 turns (each change a new version: the old units replaced). The
as_of middle is the position after the first writes (before any change). For each of --queries queries, --rounds
interleaved rounds of four recalls: current; as_of the middle; as_of the head (the versions' overhead alone); a
three-month since/until. Latency is the API's `latency_ms` and the HTTP call's wall time. Also: each versions
table's rows and the three projections' verify.

    python -m bench.as_of_domains --documents 300 --messages 3000 --transcripts 60 --queries 20 --rounds 3
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import (
    loopback_client,
    machine,
    machine_line,
    measure_modes,
    ok,
    print_modes,
    project_all,
    save_result,
    start_stack,
)

WORDS = ("harbour", "ferry", "ledger", "archive", "meeting", "budget", "garden", "invoice", "kernel", "lantern",
         "orchard", "violin", "glacier", "pepper", "saddle", "compass", "tunnel", "marble", "quartz", "walnut")
START = datetime(2025, 1, 1, tzinfo=UTC)
RESULTS = Path(__file__).parent / "results" / "as_of_domains.json"
DOMAINS = ["knowledge", "sessions", "transcripts"]
VERSIONS = ("knowledge_section_versions", "session_message_versions", "transcript_chunk_versions")


def _w(i: int, k: int) -> str:
    return WORDS[(i * k + k) % 20]


def _document(i: int, changed: bool) -> str:
    sections = [f"## Part {s}\nThe {_w(i, s + 1)} {_w(i, s + 5)} plan {i}.{s} covers the {_w(i, s + 9)} review"
                + (" (revised)" if changed and s < 2 else "") + "\n" for s in range(4)]
    return f"# Doc {i}\n\n" + "\n".join(sections)


def _turns(t: int, first: int, n: int) -> str:
    return "".join(f"[{(START + timedelta(days=t * 5, minutes=j)).isoformat().replace('+00:00', 'Z')}] "
                   f"{'USER' if j % 2 == 0 else 'ASSISTANT'}: step {j} of the {_w(t, j)} {_w(t, j + 3)} plan\n"
                   for j in range(first, first + n))


def run(documents: int, messages: int, transcripts: int, queries: int, rounds: int) -> dict[str, Any]:
    with start_stack() as where:
        from sqlalchemy import text

        from infra.db import get_engine
        from projections.rebuild import verify
        from projections.registry import PROJECTORS

        engine = get_engine()
        http = loopback_client()
        for i in range(documents):
            ok(http.put(f"/v1/knowledge/doc-{i}.md", json={"content": _document(i, False)}))
        for s in range(0, messages, 50):
            ok(http.post(f"/v1/sessions/s-{s // 50}/messages", json={"messages": [
                {"role": "user" if j % 2 == 0 else "assistant", "message_id": f"m{j}",
                 "content": f"we talked about the {_w(j, 1)} {_w(j, 7)} budget for week {j % 52}",
                 "created_at": (START + timedelta(days=365 * j / messages)).isoformat()}
                for j in range(s, min(messages, s + 50))]}))
        for t in range(transcripts):
            last = ok(http.put(f"/v1/transcripts/tr-{t}", content=_turns(t, 0, 40).encode()))
        middle = last["position"]
        for i in range(0, documents, 2):
            ok(http.put(f"/v1/knowledge/doc-{i}.md", json={"content": _document(i, True)}))
        for t in range(transcripts):
            ok(http.put(f"/v1/transcripts/tr-{t}", content=(_turns(t, 0, 40) + _turns(t, 40, 10)).encode()))
        project_all(engine)
        with engine.connect() as conn:
            head = conn.execute(text("SELECT max(position) FROM events")).scalar_one()
            rows = {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in VERSIONS}
        since = START + timedelta(days=120)
        modes: dict[str, dict[str, Any]] = {
            "current": {}, "as_of_middle": {"as_of": middle}, "as_of_head": {"as_of": head},
            "since_until_3_months": {"since": since.isoformat(), "until": (since + timedelta(days=91)).isoformat()}}
        asked = [f"{_w(q, 1)} {_w(q, 5)} plan review" for q in range(queries)]
        for q in asked:  # warm: each mode once per query, not measured
            for extra in modes.values():
                ok(http.post("/v1/recall/multi", json={"query": q, "domains": DOMAINS, **extra}))
        per_mode = measure_modes(
            lambda q, extra: ok(http.post("/v1/recall/multi", json={"query": q, "domains": DOMAINS, **extra})),
            asked, modes, rounds, lambda out: sum(len(b["results"]) for b in out["buckets"]))
        verified = {}
        for name in ("knowledge", "sessions", "transcripts"):
            started = time.perf_counter()
            verified[name] = {"identical": verify(engine, PROJECTORS[name]).identical,
                              "seconds": round(time.perf_counter() - started, 2)}
    return {"benchmark": "as_of_domains", "machine": machine(), "where": where, "documents": documents,
            "messages": messages, "transcripts": transcripts, "queries": queries, "rounds": rounds,
            "as_of_middle": middle, "head": head, "rows": rows, "verify": verified, "modes": per_mode}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=300)
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--transcripts", type=int, default=60)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    print(machine_line(machine()))
    result = run(args.documents, args.messages, args.transcripts, args.queries, args.rounds)
    print(f"{result['documents']} documents, {result['messages']} messages, {result['transcripts']} transcripts; "
          f"versions rows {result['rows']}; verify {result['verify']}")
    print_modes(result["modes"])
    print(f"saved {save_result('as_of_domains', result, args.output)}")


if __name__ == "__main__":
    main()
