"""Read-your-writes per domain on the path users take: a write over HTTP, a real Dramatiq worker projecting, then
at once the read of what it wrote, `--rounds` times per domain, twice: without min_position (how often the read
is stale: a 404, or the new item missing) and with the write's position as min_position (stale must be 0; the
read's latency, wait included).

    python -m bench.read_your_writes [--rounds 50] [--output FILE]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from bench.common import latency_stats, machine, machine_line, save_result, start_stack

# One domain's round: write something new (tag), answer (its position, the read to make given a min_position or
# None, and whether that read's answer shows the write).
Round = Callable[[Any, str], tuple[int, Callable[[dict[str, Any]], Any], Callable[[Any], bool]]]


def _memories(http: Any, tag: str) -> Any:
    done = http.post("/v1/memories", json={"content": f"crew {tag} sails at dawn", "must_keep": True}).json()
    return (done["position"], lambda p: http.get(f"/v1/memories/{done['memory_id']}", params=p),
            lambda r: r.status_code == 200)


def _knowledge(http: Any, tag: str) -> Any:
    doc = f"# Runbook {tag}\n\n## Rollback\nrun make rollback-{tag}\n"
    done = http.put(f"/v1/knowledge/ops/{tag}.md", json={"content": doc}).json()
    return (done["position"], lambda p: http.get("/v1/knowledge-sections", params={
        "path": f"ops/{tag}.md", "heading_path": f"Runbook {tag} > Rollback", **p}), lambda r: r.status_code == 200)


def _sessions(http: Any, tag: str) -> Any:
    done = http.post(f"/v1/sessions/s-{tag}/messages", json={"role": "user", "content": f"pack {tag}"}).json()
    return (done["position"], lambda p: http.get(f"/v1/sessions/s-{tag}/messages", params=p),
            lambda r: r.status_code == 200 and len(r.json()["messages"]) == 1)


def _transcripts(http: Any, tag: str) -> Any:
    text = f"[2026-02-01T09:00:00Z] USER: where is the {tag} kayak?\n"
    done = http.put(f"/v1/transcripts/t-{tag}", content=text.encode()).json()
    return (done["position"], lambda p: http.get(f"/v1/transcripts/t-{tag}/chunks/0", params=p),
            lambda r: r.status_code == 200)


def _code(http: Any, tag: str) -> Any:
    src = f"def fetch_{tag}(url):\n    return len(url)\n"
    done = http.post("/v1/code/bench/files", json={"files": [{"path": f"p/m{tag}.py", "content": src}]}).json()
    return (done["files"][0]["position"], lambda p: http.get(f"/v1/code/bench/symbols/p.m{tag}.fetch_{tag}",
                                                             params=p), lambda r: r.status_code == 200)


DOMAINS: dict[str, Round] = {"memories": _memories, "knowledge": _knowledge, "sessions": _sessions,
                             "transcripts": _transcripts, "code": _code}


def _worker() -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "dramatiq", "workers.main", "--processes", "1", "--threads", "2",
           "--queues", "projections", "ingest"]
    return subprocess.Popen(cmd, cwd=Path(__file__).resolve().parent.parent, env=dict(os.environ),
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run(rounds: int, console: Console) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    from api.app import create_app

    worker = _worker()
    out: dict[str, Any] = {}
    try:
        with TestClient(create_app(), base_url="http://127.0.0.1", client=("127.0.0.1", 50000)) as http:
            for _ in range(50):  # the worker up and projecting before anything is measured
                if http.get("/healthz").status_code == 200:
                    break
                time.sleep(0.5)
            for name, trip in DOMAINS.items():
                stale_without, stale_with, read_ms = 0, 0, []
                for _ in range(rounds):
                    _, read, shows = trip(http, uuid.uuid4().hex[:10])
                    stale_without += not shows(read({}))
                    position, read, shows = trip(http, uuid.uuid4().hex[:10])
                    t0 = time.perf_counter()
                    answer = read({"min_position": position})
                    read_ms.append((time.perf_counter() - t0) * 1000)
                    stale_with += not shows(answer)
                out[name] = {"rounds": rounds, "stale_without_min_position": stale_without,
                             "stale_with_min_position": stale_with, "read_ms_with_min_position": latency_stats(read_ms)}
                console.print(f"{name:12} stale without min_position {stale_without}/{rounds}, with {stale_with}/"
                              f"{rounds}; read with it p50 {out[name]['read_ms_with_min_position']['p50']} ms, "
                              f"p95 {out[name]['read_ms_with_min_position']['p95']} ms")
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(30)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    console = Console()
    console.print(machine_line())
    with start_stack() as where:
        result = {"machine": machine(), "stack": where, "domains": run(args.rounds, console)}
    console.print(f"saved {save_result('read-your-writes', result, args.output)}")


if __name__ == "__main__":
    main()
