"""Deep recall: its models and its budgets, sandbox, capacity and cache."""

from __future__ import annotations

from dataclasses import dataclass, field

from infra.settings._env import _at_least, _choice, _env, _positive


@dataclass(frozen=True)
class Llm:
    """Deep recall's models (deep_recall/, docs/deep_recall.md)."""

    # An OpenAI-compatible chat API or Anthropic's Messages API; no model (ENGRAMLOG_LLM_MODEL empty) answers the
    # shortcut's results. The sub-model defaults to the root model.
    llm_provider: str = field(default_factory=lambda: _choice("ENGRAMLOG_LLM_PROVIDER", "openai",
                                                              ("openai", "anthropic")))
    llm_base_url: str = field(default_factory=lambda: _env("ENGRAMLOG_LLM_BASE_URL", ""))
    llm_api_key: str = field(default_factory=lambda: _env("ENGRAMLOG_LLM_API_KEY", ""))
    llm_model: str = field(default_factory=lambda: _env("ENGRAMLOG_LLM_MODEL", ""))
    llm_sub_model: str = field(default_factory=lambda: _env("ENGRAMLOG_LLM_SUB_MODEL", ""))
    llm_stream: bool = field(
        default_factory=lambda: _env("ENGRAMLOG_LLM_STREAM", "0").lower() not in ("0", "false", "no"))
    llm_max_tokens: int = field(default_factory=lambda: int(_positive("ENGRAMLOG_LLM_MAX_TOKENS", "4096")))
    # USD per million tokens, {"model": [input, output]}; "*" prices any model not listed.
    llm_prices: str = field(default_factory=lambda: _env("ENGRAMLOG_LLM_PRICES", '{"*": [3.0, 15.0]}'))


@dataclass(frozen=True)
class DeepRecall:
    """Deep recall (deep_recall/, docs/deep_recall.md): budgets, sandbox, capacity, writes, shortcut, cache."""

    # Per-call budgets (a request may lower or raise them up to the operator's maxima).
    deep_max_iterations: int = field(default_factory=lambda: int(_positive("ENGRAMLOG_DEEP_MAX_ITERATIONS", "15")))
    deep_max_sub_calls: int = field(default_factory=lambda: int(_positive("ENGRAMLOG_DEEP_MAX_SUB_CALLS", "20")))
    deep_max_cost_usd: float = field(default_factory=lambda: _positive("ENGRAMLOG_DEEP_MAX_COST_USD", "0.5"))
    deep_cap_iterations: int = field(default_factory=lambda: int(_positive("ENGRAMLOG_DEEP_CAP_ITERATIONS", "50")))
    deep_cap_sub_calls: int = field(default_factory=lambda: int(_positive("ENGRAMLOG_DEEP_CAP_SUB_CALLS", "100")))
    deep_cap_cost_usd: float = field(default_factory=lambda: _positive("ENGRAMLOG_DEEP_CAP_COST_USD", "5"))
    deep_nested_iterations: int = field(
        default_factory=lambda: int(_positive("ENGRAMLOG_DEEP_NESTED_ITERATIONS", "5")))
    # The sandbox: each code block's limit, the whole call's hard limit (model calls and live APIs included),
    # its heap, what one block may print, what goes back to the model per turn and per live call.
    deep_block_timeout_s: float = field(default_factory=lambda: _positive("ENGRAMLOG_DEEP_BLOCK_TIMEOUT_S", "30"))
    deep_timeout_s: float = field(default_factory=lambda: _positive("ENGRAMLOG_DEEP_TIMEOUT_S", "300"))
    deep_sandbox_memory_mb: int = field(
        default_factory=lambda: int(_positive("ENGRAMLOG_DEEP_SANDBOX_MEMORY_MB", "256")))
    deep_print_bytes: int = field(default_factory=lambda: int(_positive("ENGRAMLOG_DEEP_PRINT_BYTES", "1048576")))
    deep_output_chars: int = field(default_factory=lambda: int(_positive("ENGRAMLOG_DEEP_OUTPUT_CHARS", "20000")))
    deep_live_chars: int = field(default_factory=lambda: int(_positive("ENGRAMLOG_DEEP_LIVE_CHARS", "50000")))
    deep_max_context_tokens: int = field(
        default_factory=lambda: int(_positive("ENGRAMLOG_DEEP_MAX_CONTEXT_TOKENS", "500000")))
    deep_bootstrap_ttl_s: float = field(default_factory=lambda: _positive("ENGRAMLOG_DEEP_BOOTSTRAP_TTL_S", "900"))
    # Capacity, per API process: sandbox workers (a deep recall of max_depth d reserves d, one per nesting level,
    # so at least the deepest max_depth, 3), deep recalls running at once per tenant and in all (beyond: 429).
    deep_sandbox_workers: int = field(default_factory=lambda: _at_least("ENGRAMLOG_DEEP_SANDBOX_WORKERS", "8", 3))
    deep_tenant_concurrent: int = field(
        default_factory=lambda: int(_positive("ENGRAMLOG_DEEP_TENANT_CONCURRENT", "4")))
    deep_concurrent: int = field(default_factory=lambda: int(_positive("ENGRAMLOG_DEEP_CONCURRENT", "16")))
    # Deep recall's own searches (its quick recall, the snapshot's seeds, the model's search()) running at once,
    # per process: a burst of deep recalls leaves the CPU to the other routes' recalls.
    deep_search_concurrent: int = field(
        default_factory=lambda: int(_positive("ENGRAMLOG_DEEP_SEARCH_CONCURRENT", "2")))
    # What one deep recall's code may write: store() calls and bytes (beyond either, store() raises in the sandbox,
    # nothing written), and its audit event's size (beyond it the audit is cut: deep_recall/audit_size.py).
    deep_store_calls: int = field(default_factory=lambda: int(_positive("ENGRAMLOG_DEEP_STORE_CALLS", "100")))
    deep_store_bytes: int = field(
        default_factory=lambda: int(_positive("ENGRAMLOG_DEEP_STORE_BYTES", str(1024 * 1024))))
    deep_audit_bytes: int = field(
        default_factory=lambda: int(_positive("ENGRAMLOG_DEEP_AUDIT_BYTES", str(1024 * 1024))))
    # The smart shortcut: this many results at or above this final score answer without the loop.
    deep_shortcut_score: float = field(default_factory=lambda: _positive("ENGRAMLOG_DEEP_SHORTCUT_SCORE", "0.8"))
    deep_shortcut_hits: int = field(default_factory=lambda: int(_positive("ENGRAMLOG_DEEP_SHORTCUT_HITS", "3")))
    # The query cache (Redis, shared by API processes) and blind spots.
    deep_cache_ttl_s: int = field(default_factory=lambda: int(_positive("ENGRAMLOG_DEEP_CACHE_TTL_S", "3600")))
    deep_cache_entries: int = field(default_factory=lambda: int(_positive("ENGRAMLOG_DEEP_CACHE_ENTRIES", "50")))
    blind_spot_priority: float = field(default_factory=lambda: _positive("ENGRAMLOG_BLIND_SPOT_PRIORITY", "0.85"))
    blind_spot_ttl_s: float = field(default_factory=lambda: _positive("ENGRAMLOG_BLIND_SPOT_TTL_S", "604800"))
