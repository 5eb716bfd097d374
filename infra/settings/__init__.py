"""The one settings object: every knob, its default, and its environment override, in one group per concern.

`Settings` is composed of small frozen dataclasses (settings.stack.database_url, settings.funnel.topn_mult, ...), each
knob read from its ENGRAMLOG_* variable (a few from DATABASE_URL, REDIS_URL, RABBITMQ_URL) when the group is made.
No two groups share a knob's name, so `replace(settings, topn_mult=2)` names a knob alone and finds its group.
The groups and their modules:

    service.py        stack, api, embedding, limits, projections, workers
    memory.py         governance, lifecycle, consolidation, scheduler
    recall.py         keyword, hybrid, funnel, graph, rerank, abstention, sessions
    deep.py           llm, deep
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from infra.settings._env import parse_api_keys
from infra.settings.deep import DeepRecall, Llm
from infra.settings.memory import Consolidation, Governance, Lifecycle, Scheduler
from infra.settings.recall import Abstention, Funnel, Graph, Hybrid, Keyword, Rerank, Sessions
from infra.settings.service import Api, Embedding, Limits, Projections, StackSettings, Workers

__all__ = [
    "GROUP_OF_KNOB", "STACK_STATE_FILE", "Abstention", "Api", "Consolidation", "DeepRecall", "Embedding", "Funnel",
    "Governance", "Graph", "Hybrid", "Keyword", "Lifecycle", "Limits", "Llm", "Projections", "Rerank", "Scheduler",
    "Sessions", "Settings", "StackSettings", "Workers", "parse_api_keys", "get_settings", "read_stack_state",
    "replace",
]


@dataclass(frozen=True)
class Settings:
    stack: StackSettings = field(default_factory=StackSettings)
    api: Api = field(default_factory=Api)
    embedding: Embedding = field(default_factory=Embedding)
    limits: Limits = field(default_factory=Limits)
    projections: Projections = field(default_factory=Projections)
    workers: Workers = field(default_factory=Workers)
    governance: Governance = field(default_factory=Governance)
    lifecycle: Lifecycle = field(default_factory=Lifecycle)
    consolidation: Consolidation = field(default_factory=Consolidation)
    scheduler: Scheduler = field(default_factory=Scheduler)
    keyword: Keyword = field(default_factory=Keyword)
    hybrid: Hybrid = field(default_factory=Hybrid)
    funnel: Funnel = field(default_factory=Funnel)
    graph: Graph = field(default_factory=Graph)
    rerank: Rerank = field(default_factory=Rerank)
    abstention: Abstention = field(default_factory=Abstention)
    sessions: Sessions = field(default_factory=Sessions)
    llm: Llm = field(default_factory=Llm)
    deep: DeepRecall = field(default_factory=DeepRecall)

    @property
    def multi_tenant(self) -> bool:
        return bool(self.api.api_keys)

    def resolved(self) -> Settings:
        """Fill empty service URLs from a running stack's state file in data_dir."""
        stack = self.stack
        if stack.database_url and stack.redis_url:
            return self
        state = read_stack_state(stack.data_dir)
        if not state:
            return self
        changes = {}
        if not stack.database_url:
            changes["database_url"] = state.get("database_url", "")
        if not stack.redis_url:
            changes["redis_url"] = state.get("redis_url", "")
        return replace(self, **changes)

    def api_url(self) -> str:
        state = read_stack_state(self.stack.data_dir)
        if state and state.get("api_url"):
            return state["api_url"]
        return f"http://{self.stack.host}:{self.stack.port}"


def _group_of_knobs() -> dict[str, str]:
    group_of: dict[str, str] = {}
    for group in dataclasses.fields(Settings):
        kind = group.default_factory
        assert isinstance(kind, type), group.name
        for knob in dataclasses.fields(kind):
            if knob.name in group_of:
                raise TypeError(f"settings knob {knob.name} is in two groups: {group_of[knob.name]}, {group.name}")
            group_of[knob.name] = group.name
    return group_of


GROUP_OF_KNOB = _group_of_knobs()


def replace(settings: Settings, **changes: Any) -> Settings:
    """`settings` with the knobs named changed, each in its own group: replace(s, topn_mult=2, api_keys={...})."""
    groups: dict[str, dict[str, Any]] = {}
    for name, value in changes.items():
        if name not in GROUP_OF_KNOB:
            raise TypeError(f"Settings has no knob {name!r}")
        groups.setdefault(GROUP_OF_KNOB[name], {})[name] = value
    return dataclasses.replace(settings, **{g: dataclasses.replace(getattr(settings, g), **knobs)
                                            for g, knobs in groups.items()})


STACK_STATE_FILE = "stack.json"


def read_stack_state(data_dir: Path) -> dict[str, str] | None:
    path = data_dir / STACK_STATE_FILE
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings().resolved()
