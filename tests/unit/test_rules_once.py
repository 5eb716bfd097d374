"""Each rule once: the recallable statuses and the disposition → status map in domain/memory_status.py, `has_nul`
and the whole-word pattern in domain/text.py; no copy elsewhere."""

from __future__ import annotations

import ast
from pathlib import Path

from domain.memory_status import DISPOSITION_STATUS, RECALLABLE

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("domain", "eventstore", "services", "projections", "recall", "deep_recall", "mcp_server", "workers", "api",
          "cli", "infra")
HOMES = {"domain/memory_status.py", "domain/text.py"}
NOT_YET: set[str] = set()
STATUS_WORDS = {"active", "dormant", "staging"}


def _trees() -> list[tuple[str, ast.AST]]:
    out = []
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            name = str(path.relative_to(ROOT))
            if name not in HOMES and name not in NOT_YET:
                out.append((name, ast.parse(path.read_text())))
    return out


def test_status_sets_and_the_disposition_map_are_written_once() -> None:
    found = []
    for name, tree in _trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.Tuple | ast.Set | ast.List) and len(node.elts) >= 2 and all(
                    isinstance(e, ast.Constant) and e.value in STATUS_WORDS for e in node.elts):
                found.append(f"{name}:{node.lineno}: a status set")
            if isinstance(node, ast.Dict) and {getattr(k, "value", None) for k in node.keys} >= {"discard"}:
                found.append(f"{name}:{node.lineno}: a disposition map")
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and "'active', 'dormant'" in node.value:
                found.append(f"{name}:{node.lineno}: a status set in SQL")
    assert found == []
    assert RECALLABLE == ("active", "dormant")
    assert DISPOSITION_STATUS["discard"] == "discarded"


def test_helpers_are_defined_once() -> None:
    defined = [f"{name}: {node.name}" for name, tree in _trees() for node in ast.walk(tree)
               if isinstance(node, ast.FunctionDef) and node.name in ("has_nul", "_words", "word_pattern")]
    assert defined == []
