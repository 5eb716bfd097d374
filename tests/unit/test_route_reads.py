"""A route names the recall domains it reads by their classes (api/read_your_writes.py reads): each one named is
registered (recall/domains/registry.py), none is spelt as a string, and the route waits for that domain's read
models."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path
from types import ModuleType

import pytest

from api.read_your_writes import reads
from recall.domains import registry
from recall.domains.base import RecallDomain

ROUTES = Path(__file__).resolve().parents[2] / "api" / "routes"


def _reads_arguments(path: Path) -> list[ast.expr]:
    calls = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id == "reads"]
    return [a for call in calls for a in call.args]


def _route_module(path: Path) -> ModuleType:
    return importlib.import_module(f"api.routes.{path.stem}")


def test_every_domain_a_route_reads_is_a_registered_class() -> None:
    registered = {type(d) for d in registry.DOMAINS.values()}
    named: dict[str, list[str]] = {}
    for path in sorted(ROUTES.glob("*.py")):
        for arg in _reads_arguments(path):
            assert isinstance(arg, ast.Name), f"{path.name}:{arg.lineno}: reads() names a domain by its class"
            assert getattr(_route_module(path), arg.id) in registered, f"{path.name}:{arg.lineno}: {arg.id}"
            named.setdefault(path.stem, []).append(arg.id)
    assert {"sessions", "transcripts", "knowledge", "memories", "code"} <= set(named)  # the scan saw the routes


@pytest.mark.parametrize("domain", list(registry.DOMAINS.values()), ids=lambda d: d.name)
def test_a_read_of_a_domain_waits_for_its_read_models(domain: RecallDomain) -> None:
    wait = reads(type(domain)).dependency
    assert inspect.getclosurevars(wait).nonlocals["names"] == tuple(dict.fromkeys(domain.read_models))


def test_a_read_of_no_domain_waits_for_every_domain() -> None:
    every = tuple(dict.fromkeys(n for d in registry.DOMAINS.values() for n in d.read_models))
    assert inspect.getclosurevars(reads().dependency).nonlocals["names"] == every


def test_a_class_not_registered_is_refused() -> None:
    class Unregistered:
        name = "nowhere"
        read_models = ("memories",)

    with pytest.raises(KeyError):
        reads(Unregistered)  # mypy refuses it as well: not a RecallDomain
