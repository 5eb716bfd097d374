"""Export and restore rates of the log (docs/analytics.md): --n MemoryRecorded events appended with the
eventstore's append alone (content sealed, as every content event is), exported with `engramlog export` (jsonl and
parquet, through the CLI's command in this process), then restored with `engramlog import log` into a second,
empty database on the same server. Prints events/s for each step and the files' sizes; projections are not run
(their rebuild rates: bench/projection.py).

    python -m bench.log_portability [--n 20000] [--output FILE]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.common import machine, machine_line, save_result, start_stack


def run(n: int) -> dict[str, Any]:

    from bench.corpus import memory_event, memory_texts, occurred_at, sentences
    from eventstore.append import append
    from infra.db import get_engine
    from tests.log_support import empty_store

    tenant = f"bench-{uuid.uuid4().hex[:8]}"
    texts, _ = memory_texts(n, sentences(max(1, n // 8 + 1)))
    source = get_engine()
    events = [memory_event(t, "agent-0", occurred_at(i, n), i, key_prefix=tenant) for i, t in enumerate(texts)]
    for start in range(0, n, 1000):
        with source.begin() as conn:
            append(conn, tenant, events[start:start + 1000], {"actor": "bench", "source": "bench"})
    with empty_store(source, "restore") as target:
        return _export_and_restore(source, target, tenant, n)


def _export_and_restore(source: Any, target: Any, tenant: str, n: int) -> dict[str, Any]:
    from typer.testing import CliRunner

    from cli import calls
    from cli.main import app

    runner = CliRunner()
    out: dict[str, Any] = {"n": n, "machine": machine()}
    folder = Path(tempfile.mkdtemp(prefix="engramlog-export-"))
    for fmt in ("jsonl", "parquet"):
        path = folder / f"log.{fmt}"
        calls.engine = lambda: source
        t0 = time.perf_counter()
        done = runner.invoke(app, ["export", "--format", fmt, "--output", str(path), "--tenant", tenant])
        export_s = time.perf_counter() - t0
        assert done.exit_code == 0, done.output
        if fmt == "parquet":
            calls.engine = lambda: target
            t0 = time.perf_counter()
            done = runner.invoke(app, ["import", "log", str(path)])
            import_s = time.perf_counter() - t0
            assert done.exit_code == 0, done.output
            out["import_parquet"] = {"seconds": round(import_s, 2), "events_per_s": round(n / import_s)}
        out[f"export_{fmt}"] = {"seconds": round(export_s, 2), "events_per_s": round(n / export_s),
                                "bytes": path.stat().st_size}
        path.unlink()
    folder.rmdir()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    with start_stack(with_redis=False):
        result = run(args.n)
    print(machine_line(result["machine"]))
    for step in ("export_jsonl", "export_parquet", "import_parquet"):
        r = result[step]
        print(f"{step}: {args.n} events in {r['seconds']} s = {r['events_per_s']} events/s"
              + (f", {r['bytes'] / 1e6:.1f} MB" if "bytes" in r else ""))
    print(f"saved {save_result('log_portability', result, args.output)}")


if __name__ == "__main__":
    main()
