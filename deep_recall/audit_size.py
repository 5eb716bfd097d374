"""A deep recall's audit (DeepRecallServed) fits ENGRAMLOG_DEEP_AUDIT_BYTES: the model's code decides how many
blocks, live calls and sub-calls there are, and one event must not grow with it. An audit over the cap is cut in
steps, the least telling parts first, until it fits: live calls' results, then the live calls past the first few of
each block, the nested loops' traces, the blocks' printed output, and at last the middle iterations and sub-calls.
What was cut is named in `audit_cut`; the question, scope, budgets, how it stopped and the answer are never cut.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

KEPT_LIVE_CALLS = 5  # per block, once live calls are cut
KEPT_ENDS = 3  # iterations (and sub-calls) kept at each end, once the middle ones are cut
ANSWER_CHARS = 20_000  # the answer, when even the rest cut does not make it fit


def _size(record: dict[str, Any]) -> int:
    return len(json.dumps(record, ensure_ascii=False, default=str).encode())


def _blocks(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for it in record.get("iterations", []) for b in it.get("blocks", [])]


def _live_results(record: dict[str, Any]) -> None:
    for block in _blocks(record):
        for call in block.get("live_calls", []):
            call.pop("result", None)


def _live_calls(record: dict[str, Any]) -> None:
    for block in _blocks(record):
        calls = block.get("live_calls", [])
        if len(calls) > KEPT_LIVE_CALLS:
            block["live_calls"] = [*calls[:KEPT_LIVE_CALLS], {"omitted": len(calls) - KEPT_LIVE_CALLS}]


def _traces(record: dict[str, Any]) -> None:
    for sub in record.get("sub_calls", []):
        sub.pop("trace", None)


def _outputs(record: dict[str, Any]) -> None:
    for block in _blocks(record):
        for name in ("code", "output"):
            if isinstance(block.get(name), str) and len(block[name]) > 200:
                block[name] = block[name][:200] + "…"


def _ends(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if len(items) <= 2 * KEPT_ENDS:
        return items
    return [*items[:KEPT_ENDS], {"omitted": len(items) - 2 * KEPT_ENDS}, *items[-KEPT_ENDS:]]


def _middles(record: dict[str, Any]) -> None:
    record["iterations"] = _ends(record.get("iterations", []))
    record["sub_calls"] = _ends(record.get("sub_calls", []))


def _everything(record: dict[str, Any]) -> None:
    record["iterations"], record["sub_calls"], record["shortcut_results"] = [], [], []
    if isinstance(record.get("answer"), str) and len(record["answer"]) > ANSWER_CHARS:
        record["answer"] = record["answer"][:ANSWER_CHARS] + "…"


STEPS: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("live call results", _live_results), ("live calls", _live_calls), ("nested traces", _traces),
    ("block output", _outputs), ("middle iterations and sub-calls", _middles),
    ("iterations, sub-calls and results", _everything)]


def fit(record: dict[str, Any], limit: int) -> dict[str, Any]:
    """`record`, cut (in place) until its JSON is at most `limit` bytes; `audit_cut` names what was cut."""
    cut: list[str] = []
    for name, step in STEPS:
        if _size(record) <= limit:
            break
        step(record)
        cut.append(name)
    if cut:
        record["audit_cut"] = f"over ENGRAMLOG_DEEP_AUDIT_BYTES ({limit}): cut {', '.join(cut)}"
    return record


__all__ = ["fit"]
