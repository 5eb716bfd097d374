"""The one settings object: every knob, its default, and its environment override."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


def _parse_api_keys(raw: str) -> dict[str, str]:
    keys: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in raw.split(","))):
        key, sep, tenant = pair.partition(":")
        if not sep or not key or not tenant:
            raise ValueError(f"ENGRAMLOG_API_KEYS entry {pair!r} is not 'key:tenant'")
        keys[key] = tenant
    return keys


@dataclass(frozen=True)
class Settings:
    data_dir: Path = field(default_factory=lambda: Path(_env("ENGRAMLOG_DATA_DIR", ".engramlog")).resolve())
    # External services; when empty the stack launcher provides embedded ones in data_dir.
    database_url: str = field(default_factory=lambda: _env("DATABASE_URL", ""))
    redis_url: str = field(default_factory=lambda: _env("REDIS_URL", ""))
    host: str = field(default_factory=lambda: _env("ENGRAMLOG_HOST", "127.0.0.1"))
    port: int = field(default_factory=lambda: int(_env("ENGRAMLOG_PORT", "8000")))
    api_keys: dict[str, str] = field(default_factory=lambda: _parse_api_keys(_env("ENGRAMLOG_API_KEYS", "")))
    # Keys allowed to run operators' actions over HTTP (rebuild touches every tenant's read models).
    operator_keys: tuple[str, ...] = field(
        default_factory=lambda: tuple(k for k in _env("ENGRAMLOG_OPERATOR_KEYS", "").split(",") if k))
    log_level: str = field(default_factory=lambda: _env("ENGRAMLOG_LOG_LEVEL", "info"))

    # Embeddings
    embedding_model: str = field(default_factory=lambda: _env("ENGRAMLOG_EMBEDDING_MODEL", "all-MiniLM-L6-v2"))
    embedding_dim: int = field(default_factory=lambda: int(_env("ENGRAMLOG_EMBEDDING_DIM", "384")))

    # Write path limits
    max_content_chars: int = field(default_factory=lambda: int(_env("ENGRAMLOG_MAX_CONTENT_CHARS", "32768")))
    max_batch: int = field(default_factory=lambda: int(_env("ENGRAMLOG_MAX_BATCH", "1000")))

    # Keyword leg: Okapi BM25
    bm25_k1: float = field(default_factory=lambda: float(_env("ENGRAMLOG_BM25_K1", "1.2")))
    bm25_b: float = field(default_factory=lambda: float(_env("ENGRAMLOG_BM25_B", "0.75")))

    # Hybrid recall (SwarmAI recipe: 0.6 vector absolute + 0.4 min-max BM25, threshold 0.10 for memory)
    weight_vector: float = field(default_factory=lambda: float(_env("ENGRAMLOG_WEIGHT_VECTOR", "0.6")))
    weight_keyword: float = field(default_factory=lambda: float(_env("ENGRAMLOG_WEIGHT_KEYWORD", "0.4")))
    candidates_per_leg: int = field(default_factory=lambda: int(_env("ENGRAMLOG_CANDIDATES_PER_LEG", "50")))
    score_threshold: float = field(default_factory=lambda: float(_env("ENGRAMLOG_SCORE_THRESHOLD", "0.10")))
    # Filtered vector search: exact scan when the scope holds at most this many vectors, else HNSW iterative.
    exact_scan_max_rows: int = field(default_factory=lambda: int(_env("ENGRAMLOG_EXACT_SCAN_MAX_ROWS", "20000")))
    hnsw_ef_search: int = field(default_factory=lambda: int(_env("ENGRAMLOG_HNSW_EF_SEARCH", "100")))
    min_position_wait_s: float = field(default_factory=lambda: float(_env("ENGRAMLOG_MIN_POSITION_WAIT_S", "5")))

    # Projections
    projection_batch_size: int = field(default_factory=lambda: int(_env("ENGRAMLOG_PROJECTION_BATCH", "500")))
    poll_interval_s: float = field(default_factory=lambda: float(_env("ENGRAMLOG_POLL_INTERVAL_S", "2")))
    worker_heartbeat_s: float = field(default_factory=lambda: float(_env("ENGRAMLOG_WORKER_HEARTBEAT_S", "5")))

    @property
    def multi_tenant(self) -> bool:
        return bool(self.api_keys)

    def resolved(self) -> Settings:
        """Fill empty service URLs from a running stack's state file in data_dir."""
        if self.database_url and self.redis_url:
            return self
        state = read_stack_state(self.data_dir)
        if not state:
            return self
        changes = {}
        if not self.database_url:
            changes["database_url"] = state.get("database_url", "")
        if not self.redis_url:
            changes["redis_url"] = state.get("redis_url", "")
        return replace(self, **changes)

    def api_url(self) -> str:
        state = read_stack_state(self.data_dir)
        if state and state.get("api_url"):
            return state["api_url"]
        return f"http://{self.host}:{self.port}"


def replace(settings: Settings, **changes: object) -> Settings:
    values = {f.name: getattr(settings, f.name) for f in fields(settings)}
    values.update(changes)
    return Settings(**values)  # type: ignore[arg-type]


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
