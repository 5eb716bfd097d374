"""Query-time inference, torch (sentence-transformers) against ONNX Runtime (infra/embedding.py), on this machine.

Figures per backend: the first-start export (ONNX only: export + check against sentence-transformers, into a
fresh cache directory), a single query's embedding latency p50/p95 (the recall path: one text per call),
batch throughput at batch 32 (the workers' path), and the cross-encoder's latency for one query against 40
memories (the recall rerank stage at its default pool). The two backends alternate call by call, so load from
other work on the machine falls on both alike. Agreement: the smallest cosine between the backends' vectors over
the queries, and the largest |Δscore| of the cross-encoder.

The cross-encoder is the tests' one (tests/funnel_support.py): the packaged all-MiniLM-L6-v2 encoder with a seeded
one-label head, a real CrossEncoder of the size of ms-marco-MiniLM-L6; its scores are meaningless, its cost is real.
No stack is needed. `--contend N` keeps N busy-loop processes running during the measurements: the small-machine
case where PostgreSQL, a worker or another request holds a core while a recall runs.

    python -m bench.embedding [--queries 200] [--batches 10] [--ce-runs 30] [--contend 0] [--output FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from bench.common import latency_stats, machine, machine_line, save_result, wide
from bench.corpus import memory_texts, questions, sentences

MODEL = "all-MiniLM-L6-v2"
WARMUP = 5


def _each(call: Callable[[Any, int], Any], backends: dict[str, Any]) -> dict[str, Callable[[int], Any]]:
    """One call per backend, each bound to its backend: `call(backend, i)`."""
    return {name: partial(call, backend) for name, backend in backends.items()}


def _alternate(calls: dict[str, Callable[[int], Any]], runs: int) -> dict[str, list[float]]:
    """Milliseconds per call, each backend in turn for every run."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for i in range(runs):
        for name, call in calls.items():
            start = time.perf_counter()
            call(i)
            times[name].append((time.perf_counter() - start) * 1000)
    return times


@contextlib.contextmanager
def _contention(processes: int) -> Iterator[None]:
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)]
    try:
        yield
    finally:
        for p in busy:
            p.kill()
            p.wait()


def _cross_encoder(directory: Path) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from funnel_support import build_cross_encoder

    return build_cross_encoder(directory)


def run(queries: int, batches: int, ce_runs: int, contend: int = 0) -> dict[str, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    from infra.embedding import Embedder
    from infra.onnx_models import load_onnx_cross_encoder
    from recall.funnel.rerank import load_cross_encoder

    qs = questions(queries)
    memories, _ = memory_texts(batches * 32, sentences(batches * 32))
    with tempfile.TemporaryDirectory(prefix="engramlog-bench-models-") as tmp:
        cache = Path(tmp) / "models"
        torch_embedder, onnx_embedder = Embedder(MODEL, "torch"), Embedder(MODEL, "onnx", cache)
        start = time.perf_counter()
        torch_embedder.warm()
        torch_load_s = time.perf_counter() - start
        start = time.perf_counter()
        onnx_embedder.warm()  # exports, checks, loads
        export_s = time.perf_counter() - start
        assert onnx_embedder.active_backend == "onnx", "the ONNX export did not load: see the log"
        embedders = {"torch": torch_embedder, "onnx": onnx_embedder}
        ce_dir = _cross_encoder(Path(tmp) / "cross-encoder")
        start = time.perf_counter()
        load_onnx_cross_encoder(str(ce_dir), 256, cache)
        ce_export_s = time.perf_counter() - start
        rerankers = {"torch": load_cross_encoder.__wrapped__(str(ce_dir), 256, "torch", None),
                     "onnx": load_cross_encoder.__wrapped__(str(ce_dir), 256, "onnx", cache)}
        pairs = [[(q, m) for m in memories[(i * 40) % len(memories):][:40]] for i, q in enumerate(qs[:ce_runs])]
        pairs = [p if len(p) == 40 else [(p[0][0], m) for m in memories[:40]] for p in pairs]

        def score(model: Any, i: int) -> Any:
            return model.predict(pairs[i % len(pairs)], batch_size=64, show_progress_bar=False)

        with _contention(contend):  # the measurements only: never the export or the load
            _alternate(_each(lambda e, i: e.encode_one(qs[i % len(qs)]), embedders), WARMUP)
            single = _alternate(_each(lambda e, i: e.encode_one(qs[i]), embedders), queries)
            vectors = {n: e.encode(qs) for n, e in embedders.items()}
            cosine = float((vectors["torch"] * vectors["onnx"]).sum(axis=1).min())

            _alternate(_each(lambda e, i: e.encode(memories[:32]), embedders), 1)
            batch = _alternate(_each(lambda e, i: e.encode(memories[i * 32:(i + 1) * 32]), embedders), batches)

            _alternate(_each(score, rerankers), 3)
            ce = _alternate(_each(score, rerankers), ce_runs)
        ce_diff = float(max(np.abs(np.asarray(score(rerankers["torch"], i)) - score(rerankers["onnx"], i)).max()
                            for i in range(min(5, len(pairs)))))

    backends: dict[str, Any] = {}
    for name in embedders:
        backends[name] = {
            "single_query_ms": latency_stats(single[name]),
            "batch32_texts_per_s": round(32 * batches / (sum(batch[name]) / 1000), 1),
            "batch32_ms": latency_stats(batch[name]),
            "cross_encoder_40_pairs_ms": latency_stats(ce[name]),
        }
    return {"benchmark": "embedding", "machine": machine(), "model": MODEL, "torch_threads": torch.get_num_threads(),
            "queries": queries, "batches": batches, "ce_runs": ce_runs, "contend": contend, "backends": backends,
            "agreement": {"min_cosine": round(cosine, 6), "cross_encoder_max_abs_diff": ce_diff},
            "first_start_s": {"torch_embedder_load": round(torch_load_s, 2),
                              "onnx_embedder_export_check_load": round(export_s, 2),
                              "onnx_cross_encoder_export_check_load": round(ce_export_s, 2)}}


def report(result: dict[str, Any], console: Console) -> None:
    console = wide(console)
    console.print(machine_line(result["machine"]) + f", torch threads {result['torch_threads']}")
    table = Table(title=f"Query-time inference, {result['model']} ({result['queries']} queries, "
                        f"{result['batches']} batches of 32, {result['ce_runs']} rerank calls, "
                        f"{result['contend']} busy-loop processes alongside)")
    for column in ("backend", "single query p50 / p95 ms", "batch 32 texts/s", "cross-encoder 40 pairs p50 / p95 ms"):
        table.add_column(column, justify="right")
    for name, b in result["backends"].items():
        table.add_row(name, f"{b['single_query_ms']['p50']} / {b['single_query_ms']['p95']}",
                      str(b["batch32_texts_per_s"]),
                      f"{b['cross_encoder_40_pairs_ms']['p50']} / {b['cross_encoder_40_pairs_ms']['p95']}")
    console.print(table)
    a, f = result["agreement"], result["first_start_s"]
    console.print(f"agreement: min cosine {a['min_cosine']}, cross-encoder max |Δscore| "
                  f"{a['cross_encoder_max_abs_diff']:.2e}")
    console.print(f"first start: torch embedder load {f['torch_embedder_load']} s; ONNX export + check + load: "
                  f"embedder {f['onnx_embedder_export_check_load']} s, cross-encoder "
                  f"{f['onnx_cross_encoder_export_check_load']} s (once per model, cached in data_dir/models)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--ce-runs", type=int, default=30)
    parser.add_argument("--contend", type=int, default=0, help="busy-loop processes during the measurements")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("ENGRAMLOG_LOG_LEVEL", "warning")
    from infra.logging import configure_logging

    configure_logging(os.environ["ENGRAMLOG_LOG_LEVEL"])
    result = run(args.queries, args.batches, args.ce_runs, args.contend)
    report(result, Console())
    print(f"saved {save_result('embedding', result, args.output)}")


if __name__ == "__main__":
    main()
