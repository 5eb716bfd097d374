"""Code index of a real repository nobody here wrote: the installed source of a package (default: rich).

Through the path users take: `engramlog code index PATH --repo NAME` (cli/code.py) against the real app (in
process, the CLI's API client on a TestClient) on an embedded PostgreSQL; then the code projector caught up.
Reports the files, symbols and call edges found (resolved or not), the seconds of each phase and symbols per
second, symbol-search latency, and a spot check: each checked function's resolved callers beside a
`grep -rn "name("` over the same folder (whose lines include the definition, comments, strings and calls of
other functions of that name).

    python -m bench.code_index [--package rich] [--functions loop_last,cell_len,pick_bool]
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import time
from pathlib import Path
from typing import Any

from bench.common import cli_through, latency_stats, loopback_client, machine, machine_line, save_result, start_stack

QUERIES = ("render a table", "measure the width of text", "escape markup", "progress bar columns",
           "syntax highlighting theme", "loop last", "cell length", "console print", "traceback frames",
           "pretty repr of a dict")


def _grep(root: Path, name: str) -> list[str]:
    out = subprocess.run(["grep", "-rn", "--include=*.py", f"{name}(", "."], cwd=root, capture_output=True,
                         text=True).stdout
    return [line for line in out.splitlines() if re.search(rf"(?<![\w.]){re.escape(name)}\(|\.{re.escape(name)}\(",
                                                           line)]


def run(package: str, functions: list[str]) -> dict[str, Any]:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"package {package!r} is not installed")
    root = Path(next(iter(spec.submodule_search_locations)))
    with start_stack() as where:
        from sqlalchemy import text
        from typer.testing import CliRunner

        import cli.main
        from bench.corpus import project
        from infra.db import get_engine

        engine = get_engine()
        with loopback_client() as http:
            cli_through(http)
            started = time.perf_counter()
            r = CliRunner().invoke(cli.main.app, ["code", "index", str(root), "--repo", package])
            index_s = time.perf_counter() - started
            if r.exit_code != 0:
                raise SystemExit(r.output)
            events, project_s = project(engine, "code", 200)
            started = time.perf_counter()
            again = CliRunner().invoke(cli.main.app, ["code", "index", str(root), "--repo", package])
            reindex_s = time.perf_counter() - started
        with engine.connect() as conn:
            q = {"t": "default", "r": package}
            files, parse_errors = conn.execute(text(
                "SELECT count(*), count(*) FILTER (WHERE parse_errors > 0) FROM code_files"
                " WHERE tenant = :t AND repo = :r"), q).one()
            symbols: dict[str, int] = dict(conn.execute(text(
                "SELECT kind, count(*) FROM code_symbols WHERE tenant = :t AND repo = :r GROUP BY kind"), q).all())
            hows: dict[str, int] = dict(conn.execute(text(
                "SELECT how, count(*) FROM code_calls WHERE tenant = :t AND repo = :r GROUP BY how"), q).all())
            spot = []
            for name in functions:
                defs = conn.execute(text("SELECT qualified_name, path FROM code_symbols WHERE tenant = :t AND"
                                         " repo = :r AND name = :n ORDER BY path"), {**q, "n": name}).all()
                callers = conn.execute(text(
                    "SELECT path, line, caller, how FROM code_calls WHERE tenant = :t AND repo = :r AND"
                    " resolved_name = ANY(:qns) ORDER BY path, line"), {**q, "qns": [d.qualified_name for d in defs]}
                ).all()
                unresolved = conn.execute(text(
                    "SELECT count(*) FROM code_calls WHERE tenant = :t AND repo = :r AND target_name = :n"
                    " AND resolved_name IS NULL"), {**q, "n": name}).scalar_one()
                grep = _grep(root, name)
                grep_sites = {(g.split(":")[0].removeprefix("./"), int(g.split(":")[1])) for g in grep}
                found = {(c.path, c.line) for c in callers}
                spot.append({"function": name, "definitions": [d.qualified_name for d in defs],
                             "resolved_callers": len(callers), "unresolved_calls_of_that_name": unresolved,
                             "grep_lines": len(grep), "grep_lines_not_found": sorted(
                                 f"{p}:{n}" for p, n in grep_sites - found),
                             "callers_not_in_grep": sorted(f"{p}:{n}" for p, n in found - grep_sites),
                             "how": sorted({c.how for c in callers})})
        from datetime import UTC, datetime

        from domain.privacy import NO_POLICY
        from recall.domains.base import DomainQuery
        from recall.domains.code import CodeDomain
        from recall.scope import Scope

        latencies = []
        for query in QUERIES * 3:
            t0 = time.perf_counter()
            CodeDomain().search(engine, DomainQuery(Scope("default"), query, 10, datetime.now(UTC), NO_POLICY))
            latencies.append((time.perf_counter() - t0) * 1000)
        n_symbols = sum(symbols.values())
        n_edges = sum(hows.values())
        resolved = sum(v for k, v in hows.items() if k in ("import", "self", "qualified", "file", "unique"))
        return {
            "benchmark": "code_index", "package": package, "root": str(root), "machine": machine(), **where,
            "command": f"engramlog code index {root} --repo {package}",
            "files": files, "files_with_parse_errors": parse_errors, "events": events,
            "symbols": n_symbols, "symbols_by_kind": symbols, "call_edges": n_edges, "resolved_edges": resolved,
            "edges_by_resolution": hows,
            "seconds": {"cli_index": round(index_s, 2), "projection": round(project_s, 2),
                        "total": round(index_s + project_s, 2), "reindex_unchanged": round(reindex_s, 2)},
            "symbols_per_second": round(n_symbols / (index_s + project_s), 1),
            "projection_symbols_per_second": round(n_symbols / project_s, 1),
            "reindex_output": " ".join(again.output.split())[:300],
            "search_latency_ms": latency_stats(latencies), "spot_check": spot}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--package", default="rich")
    parser.add_argument("--functions", default="loop_last,cell_len,pick_bool")
    args = parser.parse_args()
    result = run(args.package, args.functions.split(","))
    print(machine_line(result["machine"]))
    for key in ("files", "files_with_parse_errors", "symbols", "call_edges", "resolved_edges", "seconds",
                "symbols_per_second", "projection_symbols_per_second", "search_latency_ms", "reindex_output"):
        print(f"{key}: {result[key]}")
    for s in result["spot_check"]:
        print(f"spot check {s['function']}: {s['resolved_callers']} resolved callers, grep {s['grep_lines']} lines;"
              f" grep lines not found: {s['grep_lines_not_found']}")
    print(save_result(f"code-index-{args.package}", result))


if __name__ == "__main__":
    main()
