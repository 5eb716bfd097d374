"""The governor's decisions on LoCoMo conversations, written as `engramlog eval locomo --gate` writes them (one
governed batch per conversation, kind message, no must_keep), counted per kind: admitted active / staging /
discard, reinforced, superseded by trigger. The write path's rules change these; recall reads what they leave, so
two code versions that decide alike recall alike.

    .venv/bin/python -m bench.governor_decisions [--convs conv-26 ...] [--output FILE]
"""

from __future__ import annotations

import argparse
import uuid
from pathlib import Path
from typing import Any

from bench.common import machine, save_result, start_stack
from bench.locomo_data import load_conversations

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "eval" / "locomo" / "locomo_dev.json"


def decisions(engine: Any, tenant: str) -> dict[str, int]:
    """Counted from the log as the eventstore reads it (opened: a decision's reason and inputs are sealed)."""
    from dataclasses import replace

    from domain.events import MemoryAdmitted, MemoryReinforced, MemorySuperseded
    from eventstore.query import EventFilter, query_page
    from eventstore.read import Checkpoint

    counts: dict[str, int] = {}
    f = EventFilter(tenant, types=tuple(t.type_name() for t in (MemoryAdmitted, MemorySuperseded, MemoryReinforced)))
    with engine.connect() as conn:
        while True:
            page, more = query_page(conn, f, limit=1000)
            for e in page:
                key = {MemoryAdmitted.type_name(): f"admitted:{e.data.get('disposition')}",
                       MemorySuperseded.type_name(): f"superseded:{e.data.get('trigger')}"}.get(e.type, "reinforced")
                counts[key] = counts.get(key, 0) + 1
            if not more or not page:
                break
            f = replace(f, after_cursor=Checkpoint(page[-1].tx_id, page[-1].position))
    return dict(sorted(counts.items()))


def run(data: Path, convs: list[str], output: Path | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with start_stack():
        from infra.db import get_engine
        from infra.embedding import get_embedder
        from infra.settings import get_settings
        from services.remember import MemoryInput, remember

        engine = get_engine()
        get_embedder(get_settings().embedding.embedding_model).warm()
        for conv in load_conversations(data, convs):
            tenant = f"decisions-{conv.sample_id}"
            remember(engine, tenant, [
                MemoryInput(content=t["content"], kind="message", agent_id="locomo", occurred_at=t["occurred_at"],
                            metadata={"dia_id": t["dia_id"]},
                            memory_id=uuid.uuid5(uuid.NAMESPACE_URL, f"{conv.sample_id}:{t['dia_id']}"))
                for t in conv.turns], {"source": "bench", "actor": "bench"})
            out[conv.sample_id] = {"turns": len(conv.turns), "decisions": decisions(engine, tenant)}
            print(conv.sample_id, out[conv.sample_id], flush=True)
    result = {"bench": "governor_decisions", "data": str(data), "machine": machine(), "conversations": out}
    print(f"saved {save_result('governor-decisions', result, output)}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--convs", nargs="*", default=[])
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    run(args.data, args.convs, args.output)


if __name__ == "__main__":
    main()
