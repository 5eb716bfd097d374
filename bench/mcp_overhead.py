"""MCP tool-call overhead over `recall` through HTTP: the same recall, N times each way, on one running stack
(embedded PostgreSQL and Redis, a real worker, the API under uvicorn on loopback):

    http   POST /v1/recall with the SDK's AsyncEngramlog
    mcp    the `recall` tool over streamable HTTP at /mcp (the official SDK's client; the tool calls the app
           in-process through ASGITransport)
    stdio  the `recall` tool through `engramlog mcp` (a subprocess; the tool calls the API over HTTP)

    python -m bench.mcp_overhead [--calls 200] [--memories 500]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from bench.common import latency_stats, machine, machine_line, save_result, start_stack
from bench.corpus import sentences

QUERIES = ("where does the team meet?", "what changed in the deploy?", "who owns billing?", "when is the review?")


async def _timed(n: int, call: Any) -> list[float]:
    for i in range(5):  # warm-up: connections, caches
        await call(QUERIES[i % len(QUERIES)])
    out = []
    for i in range(n):
        started = time.perf_counter()
        await call(QUERIES[i % len(QUERIES)])
        out.append((time.perf_counter() - started) * 1000)
    return out


async def _measure(url: str, n: int) -> dict[str, list[float]]:
    import httpx2
    from engramlog_client import AsyncEngramlog
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client

    times: dict[str, list[float]] = {}
    async with AsyncEngramlog(url) as sdk:
        times["http"] = await _timed(n, lambda q: sdk.recall(q, k=10, consistent=False))

    async def tool(session: ClientSession, q: str) -> None:
        result = await session.call_tool("recall", {"query": q, "k": 10})
        assert not result.is_error, result.content

    async with streamable_http_client(f"{url}/mcp", http_client=httpx2.AsyncClient(timeout=60)) as streams, \
            ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        times["mcp"] = await _timed(n, lambda q: tool(session, q))
    engramlog = str(Path(sys.executable).parent / "engramlog")
    params = StdioServerParameters(command=engramlog, args=["mcp", "--api-url", url], env={"HF_HUB_OFFLINE": "1"})
    async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        times["stdio"] = await _timed(n, lambda q: tool(session, q))
    return times


class _Server:
    """uvicorn in a thread on a free loopback port."""

    def __init__(self, app: Any) -> None:
        import socket
        import threading

        import uvicorn

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--memories", type=int, default=500)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    console = Console()
    with start_stack() as where:
        from engramlog_client import Engramlog

        from api.app import create_app
        from bench.recallable_lag import _worker

        worker = _worker()
        server = _Server(create_app())
        try:
            with Engramlog(server.url) as sdk:
                texts = sentences(args.memories)
                for start in range(0, len(texts), 500):
                    sdk.remember_many([{"content": t, "must_keep": True} for t in texts[start:start + 500]])
                assert sdk.wait_recallable(timeout=60)
            times = asyncio.run(_measure(server.url, args.calls))
        finally:
            server.stop()
            worker.terminate()
            worker.wait(30)
    stats = {name: latency_stats(values) for name, values in times.items()}
    result = {"calls": args.calls, "memories": args.memories, "stack": where, "machine": machine(),
              "latency_ms": stats,
              "overhead_p50_ms": {name: round(stats[name]["p50"] - stats["http"]["p50"], 2)
                                  for name in ("mcp", "stdio")}}
    console.print(machine_line(result["machine"]))
    for name, s in stats.items():
        console.print(f"{name:5s}  p50 {s['p50']:.2f} ms  p95 {s['p95']:.2f} ms  (n={args.calls})")
    console.print(f"MCP overhead over HTTP recall (p50): /mcp {result['overhead_p50_ms']['mcp']} ms, "
                  f"stdio {result['overhead_p50_ms']['stdio']} ms")
    console.print(f"saved {save_result('mcp-overhead', result, args.output)}")


if __name__ == "__main__":
    main()
