"""The session-persistent store and the bootstrap snapshot, per (tenant, agent, session, project).

store(key, value) appends a DeepRecallStored (a write like any other: an analyst sees what deep recall kept) and
the deep_recall_store read model (projections/deep_recall.py) holds the latest value per key, so values survive
calls, restarts and rebuilds. A process keeps each scope's values in memory too (values it stored are readable at
once, before the projector has them), merged with the read model's by log position at each deep recall.

The bootstrap snapshot is kept in memory per scope and rebuilt once it is older than deep_bootstrap_ttl_s or the
tenant's privacy policy changed; the store survives its rebuild. FINAL is per run, never kept.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, text

from domain.errors import InvalidPayload
from domain.events import (
    ContentForgotten,
    DeepRecallStored,
    NewEvent,
    deep_scope_key,
    deep_store_stream,
    validate_payload,
)
from domain.privacy import PrivacyPolicy
from eventstore.append import append
from eventstore.read import event_at
from infra.wake import appended
from recall.event_privacy import Gate, deep_recall_stored

MAX_SCOPES = 64  # scopes kept in memory per process (least recently used dropped; the read model keeps values)


@dataclass
class ScopeState:
    values: dict[str, tuple[int, Any]] = field(default_factory=dict)  # key -> (position, value)
    bootstrap: dict[str, Any] | None = None
    built_at: float = 0.0
    policy_position: int | None = None  # of the privacy policy the snapshot was built under


_states: OrderedDict[tuple[str, str], ScopeState] = OrderedDict()
_lock = threading.Lock()


def _state(tenant: str, scope_key: str) -> ScopeState:
    with _lock:
        state = _states.pop((tenant, scope_key), None) or ScopeState()
        _states[(tenant, scope_key)] = state
        while len(_states) > MAX_SCOPES:
            _states.popitem(last=False)
        return state


def forget_tenant_state(tenant: str) -> None:
    """Drop the tenant's scopes' in-memory state (a forget: rebuilt from the read model on the next use)."""
    with _lock:
        for key in [k for k in _states if k[0] == tenant]:
            del _states[key]


def forget_process_state() -> None:
    """Drop every scope's in-memory state (what a restart does); tests use it."""
    with _lock:
        _states.clear()


class Store:
    """One scope's store for one deep recall: get() from memory, store() appended to the log first."""

    def __init__(self, engine: Engine, tenant: str, agent_id: str | None, session_id: str | None,
                 project: str | None, recall_id: uuid.UUID, metadata: dict[str, Any],
                 max_calls: int | None = None, max_bytes: int | None = None) -> None:
        self.engine, self.tenant, self.recall_id, self.metadata = engine, tenant, recall_id, metadata
        # What one deep recall's code may write (ENGRAMLOG_DEEP_STORE_CALLS, ENGRAMLOG_DEEP_STORE_BYTES), and how
        # much it has: each store() is an event in the log, so a loop in the model's code must not flood it.
        self.max_calls, self.max_bytes = max_calls, max_bytes
        self.calls, self.bytes = 0, 0
        self.agent_id, self.session_id, self.project = agent_id, session_id, project
        self.scope_key = deep_scope_key(agent_id, session_id, project)
        self.state = _state(tenant, self.scope_key)
        self.withheld: set[str] = set()  # keys whose value the privacy policy in force hides (withhold)
        self._load()

    def _load(self) -> None:
        with self.engine.connect() as conn:
            rows = conn.execute(text("SELECT key, value, position FROM deep_recall_store"
                                     " WHERE tenant = :tenant AND scope_key = :scope_key"),
                                {"tenant": self.tenant, "scope_key": self.scope_key}).all()
        for row in rows:
            known = self.state.values.get(row.key)
            if known is None or known[0] < row.position:
                self.state.values[row.key] = (row.position, row.value)

    def get(self, key: str, default: Any = None) -> Any:
        if not isinstance(key, str):
            raise TypeError("get() takes a string key")
        found = None if key in self.withheld else self.state.values.get(key)
        return default if found is None else found[1]

    def keys(self) -> list[str]:
        return sorted(set(self.state.values) - self.withheld)

    def withhold(self, policy: PrivacyPolicy) -> None:
        """Hide from this deep recall the values the privacy policy in force hides: a value stored by a deep recall
        whose audit it hides now (what it read is excluded since), or holding an excluded item's fields."""
        if policy.empty:
            return
        with self.engine.connect() as conn:
            gate = Gate(conn, self.tenant, policy, set())
            for key, (position, _) in list(self.state.values.items()):
                event = event_at(conn, position)
                if (event is None or event.tenant != self.tenant or event.is_a(ContentForgotten)  # forgotten since
                        or deep_recall_stored(gate, event.data, position)):
                    self.withheld.add(key)

    def store(self, key: str, value: Any) -> None:
        if not isinstance(key, str):
            raise TypeError("store() takes a string key")
        try:
            data = validate_payload(DeepRecallStored, {
                "scope_key": self.scope_key, "agent_id": self.agent_id, "session_id": self.session_id,
                "project": self.project, "key": key, "value": value, "recall_id": str(self.recall_id)})
        except InvalidPayload as exc:
            raise ValueError(str(exc)) from None
        self._charge(len(key.encode()) + len(json.dumps(data["value"], separators=(",", ":")).encode()))
        with self.engine.begin() as conn:
            [position] = append(conn, self.tenant, [NewEvent(DeepRecallStored.type_name(),
                                                             deep_store_stream(self.scope_key), data)],
                                {**self.metadata, "actor": "system:deep_recall"})
        appended(1)
        self.state.values[key] = (position, data["value"])

    def _charge(self, size: int) -> None:
        """Count one store() of `size` bytes, or refuse it (nothing written) beyond this deep recall's caps."""
        if self.max_calls is not None and self.calls >= self.max_calls:
            raise RuntimeError(f"store() refused: a deep recall may store at most {self.max_calls} times "
                               f"(ENGRAMLOG_DEEP_STORE_CALLS); keep fewer, larger values")
        if self.max_bytes is not None and self.bytes + size > self.max_bytes:
            raise RuntimeError(f"store() refused: a deep recall may store at most {self.max_bytes} bytes "
                               f"(ENGRAMLOG_DEEP_STORE_BYTES), {self.bytes} stored so far and this value is {size}")
        self.calls += 1
        self.bytes += size

    def bootstrap(self, ttl_s: float, build: Any, policy_position: int | None = None) -> dict[str, Any]:
        """The scope's snapshot, rebuilt by `build()` when missing, older than ttl_s, or built under another privacy
        policy (`policy_position`: its PrivacyPolicySet's), so a new policy holds from the next deep recall."""
        if (self.state.bootstrap is None or time.monotonic() - self.state.built_at > ttl_s
                or self.state.policy_position != policy_position):
            self.state.bootstrap = build()
            self.state.built_at = time.monotonic()
            self.state.policy_position = policy_position
        return self.state.bootstrap


__all__ = ["ScopeState", "Store", "forget_process_state", "forget_tenant_state"]
