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


def _actr_decay(raw: str) -> float:
    from domain.activation import check_decay

    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"ENGRAMLOG_ACTR_DECAY={raw!r} is not a number") from None
    try:
        return check_decay(value)
    except ValueError as exc:
        raise ValueError(f"ENGRAMLOG_ACTR_DECAY: {exc}") from None


def _positive(name: str, default: str) -> float:
    raw = _env(name, default)
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number") from None
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {raw!r}")
    return value


def _at_least(name: str, default: str, least: int) -> int:
    value = int(_positive(name, default))
    if value < least:
        raise ValueError(f"{name} must be at least {least}, got {value}")
    return value


def _choice(name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = _env(name, default).strip().lower()
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not one of {', '.join(allowed)}")
    return value


@dataclass(frozen=True)
class Settings:
    data_dir: Path = field(default_factory=lambda: Path(_env("ENGRAMLOG_DATA_DIR", ".engramlog")).resolve())
    # External services; when empty the stack launcher provides embedded ones in data_dir.
    database_url: str = field(default_factory=lambda: _env("DATABASE_URL", ""))
    redis_url: str = field(default_factory=lambda: _env("REDIS_URL", ""))
    host: str = field(default_factory=lambda: _env("ENGRAMLOG_HOST", "127.0.0.1"))
    port: int = field(default_factory=lambda: int(_env("ENGRAMLOG_PORT", "8000")))
    # `engramlog up`'s stop: each child gets this long after its stop signal, then SIGKILL (stack/up.py).
    stop_grace_s: float = field(default_factory=lambda: _positive("ENGRAMLOG_STOP_GRACE_S", "10"))
    # How long `engramlog up` waits for /healthz. Its children are watched meanwhile (one that dies fails the start
    # at once), so the limit is for a slow machine: a first start exports the ONNX model, minutes on 2 busy cores.
    up_health_timeout_s: float = field(default_factory=lambda: _positive("ENGRAMLOG_UP_HEALTH_TIMEOUT_S", "600"))
    api_keys: dict[str, str] = field(default_factory=lambda: _parse_api_keys(_env("ENGRAMLOG_API_KEYS", "")))
    # Keys allowed to run operators' actions over HTTP (rebuild touches every tenant's read models).
    operator_keys: tuple[str, ...] = field(
        default_factory=lambda: tuple(k for k in _env("ENGRAMLOG_OPERATOR_KEYS", "").split(",") if k))
    log_level: str = field(default_factory=lambda: _env("ENGRAMLOG_LOG_LEVEL", "info"))

    # Embeddings
    embedding_model: str = field(default_factory=lambda: _env("ENGRAMLOG_EMBEDDING_MODEL", "all-MiniLM-L6-v2"))
    embedding_dim: int = field(default_factory=lambda: int(_env("ENGRAMLOG_EMBEDDING_DIM", "384")))
    # Query-time inference (the embedder and the reranker): "onnx" = ONNX Runtime on CPU, each model exported once
    # into data_dir/models and checked against sentence-transformers (torch, logged, when it cannot serve); "torch".
    inference_backend: str = field(default_factory=lambda: _choice(
        "ENGRAMLOG_INFERENCE_BACKEND", "onnx", ("onnx", "torch")))

    # Write path limits
    max_content_chars: int = field(default_factory=lambda: int(_env("ENGRAMLOG_MAX_CONTENT_CHARS", "32768")))
    # A knowledge-library document's UTF-8 size (PUT /v1/knowledge/{path}); its sections are cut from it verbatim.
    max_document_bytes: int = field(default_factory=lambda: int(_env("ENGRAMLOG_MAX_DOCUMENT_BYTES", "2097152")))
    # When knowledge sections get vectors: "lazy" the first time a recall returns one or a drill fetches it (from
    # the hit-log, projections/section_vectors.py); "eager" every section of every put version.
    knowledge_embedding: str = field(default_factory=lambda: _choice(
        "ENGRAMLOG_KNOWLEDGE_EMBEDDING", "lazy", ("lazy", "eager")))
    # A source file's UTF-8 size in a code index (POST /v1/code/{repo}/files: 413 beyond it; the CLI skips it).
    max_code_file_bytes: int = field(default_factory=lambda: int(_env("ENGRAMLOG_MAX_CODE_FILE_BYTES", "1048576")))
    max_batch: int = field(default_factory=lambda: int(_env("ENGRAMLOG_MAX_BATCH", "1000")))
    # GET /v1/events: a page is cut at this many bytes of stored event data (its next_cursor goes on from there).
    events_page_bytes: int = field(
        default_factory=lambda: int(_positive("ENGRAMLOG_EVENTS_PAGE_BYTES", str(8 * 1024 * 1024))))

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
    # A governed write waits at most this long for its scope's lock (another write in the scope), then 503.
    governance_lock_timeout_s: float = field(
        default_factory=lambda: float(_env("ENGRAMLOG_GOVERNANCE_LOCK_TIMEOUT_S", "10")))
    # Read-your-writes waiters at once per API process; beyond it a waiting request is answered 503 at once.
    max_position_waiters: int = field(default_factory=lambda: int(_env("ENGRAMLOG_MAX_POSITION_WAITERS", "256")))

    # Every database statement on every connection (PostgreSQL's statement_timeout, infra/db.py); 0: no limit.
    statement_timeout_s: float = field(default_factory=lambda: float(_env("ENGRAMLOG_STATEMENT_TIMEOUT_S", "60")))

    # Projections
    projection_batch_size: int = field(default_factory=lambda: int(_env("ENGRAMLOG_PROJECTION_BATCH", "500")))
    # A batch is cut at this many bytes of stored event data too (one large event is still a batch of one).
    projection_batch_bytes: int = field(
        default_factory=lambda: int(_positive("ENGRAMLOG_PROJECTION_BATCH_BYTES", str(16 * 1024 * 1024))))
    # One event's apply (and a batch's) runs at most this long; over it, it is one failed attempt of that event,
    # parked after MAX_EVENT_FAILURES like any failing event (projections/runner.py), so it holds no one else up.
    projection_event_timeout_s: float = field(
        default_factory=lambda: _positive("ENGRAMLOG_PROJECTION_EVENT_TIMEOUT_S", "60"))
    poll_interval_s: float = field(default_factory=lambda: float(_env("ENGRAMLOG_POLL_INTERVAL_S", "2")))
    # Worker processes (`engramlog up --workers N`) and the partitions they share each projection's work in (by
    # a hash of the tenant, projections/partitions.py); unset, as many partitions as workers. Every worker of a
    # deployment must be given the same count: the one the rows hold is the one in force until all agree.
    workers: int = field(default_factory=lambda: _at_least("ENGRAMLOG_WORKERS", "1", 1))
    projection_partitions: int = field(default_factory=lambda: _at_least(
        "ENGRAMLOG_PROJECTION_PARTITIONS", _env("ENGRAMLOG_WORKERS", "1"), 1))
    # The Dramatiq broker: "redis" (REDIS_URL) or "rabbitmq" (Dramatiq's RabbitmqBroker on RABBITMQ_URL, for a
    # deployment whose queue outgrows one Redis; docs/scale-out.md). Redis still holds the heartbeat and caches.
    broker: str = field(default_factory=lambda: _choice("ENGRAMLOG_BROKER", "redis", ("redis", "rabbitmq")))
    rabbitmq_url: str = field(default_factory=lambda: _env("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/"))
    worker_heartbeat_s: float = field(default_factory=lambda: float(_env("ENGRAMLOG_WORKER_HEARTBEAT_S", "5")))

    # Governance (issue 3 §1, Engineer G): the write path's salience gate, reinforce and supersede.
    # salience = Σ weight·signal + type bonus (domain/salience.py) → active ≥ gate_active, staging ≥ gate_staging.
    salience_w_novelty: float = field(default_factory=lambda: float(_env("ENGRAMLOG_SALIENCE_W_NOVELTY", "0.45")))
    salience_w_surprise: float = field(default_factory=lambda: float(_env("ENGRAMLOG_SALIENCE_W_SURPRISE", "0.15")))
    salience_w_decision: float = field(default_factory=lambda: float(_env("ENGRAMLOG_SALIENCE_W_DECISION", "0.15")))
    salience_w_causal: float = field(default_factory=lambda: float(_env("ENGRAMLOG_SALIENCE_W_CAUSAL", "0.15")))
    salience_w_effort: float = field(default_factory=lambda: float(_env("ENGRAMLOG_SALIENCE_W_EFFORT", "0.10")))
    gate_active: float = field(default_factory=lambda: float(_env("ENGRAMLOG_GATE_ACTIVE", "0.4")))
    gate_staging: float = field(default_factory=lambda: float(_env("ENGRAMLOG_GATE_STAGING", "0.2")))
    # A write whose nearest memory in its scope (tenant, agent, project) is at least this similar reinforces it
    # instead of being added; a correction at least `supersede_threshold` similar supersedes it.
    reinforce_threshold: float = field(default_factory=lambda: float(_env("ENGRAMLOG_REINFORCE_THRESHOLD", "0.92")))
    supersede_threshold: float = field(default_factory=lambda: float(_env("ENGRAMLOG_SUPERSEDE_THRESHOLD", "0.6")))
    # Share of the way to 1 a reinforcement moves the memory's confidence (domain/reinforce.py).
    reinforce_confidence_gain: float = field(
        default_factory=lambda: float(_env("ENGRAMLOG_REINFORCE_CONFIDENCE_GAIN", "0.1")))
    # Memories written but not yet projected that the governor also compares against: those among the tenant's
    # newest this many recorded events above the projections' checkpoints (a bounded cost per write).
    governance_unprojected_max: int = field(
        default_factory=lambda: int(_env("ENGRAMLOG_GOVERNANCE_UNPROJECTED_MAX", "500")))

    # Lifecycle (issue 3 §2): ACT-R activation, Darwinian decay, consolidation ("sleep"), the scheduler.
    # ACT-R decay exponent d of B = ln(n + 1) − d·ln(age / (n + 1)); refused outside [0.3, 0.6].
    actr_decay: float = field(default_factory=lambda: _actr_decay(_env("ENGRAMLOG_ACTR_DECAY", "0.5")))
    # Decay sweep: active → dormant after this many days unreferenced, dormant → archived after (from the last
    # reference, not from the dormant transition); staging → discarded after the TTL without reinforcement.
    dormant_after_days: float = field(default_factory=lambda: _positive("ENGRAMLOG_DORMANT_AFTER_DAYS", "30"))
    archive_after_days: float = field(default_factory=lambda: _positive("ENGRAMLOG_ARCHIVE_AFTER_DAYS", "90"))
    staging_ttl_days: float = field(default_factory=lambda: _positive("ENGRAMLOG_STAGING_TTL_DAYS", "14"))
    # Consolidation: cluster diameter (max cosine distance between any two members) and size, bridge floor,
    # near-duplicate threshold, Hebbian forget floor and its age / idleness gates, per-memory edge-weight cap,
    # and the page size: a scope of any size is read in chunks and planned in pages of this many memories.
    consolidation_cluster_distance: float = field(
        default_factory=lambda: _positive("ENGRAMLOG_CONSOLIDATION_CLUSTER_DISTANCE", "0.45"))
    consolidation_max_cluster: int = field(
        default_factory=lambda: int(_positive("ENGRAMLOG_CONSOLIDATION_MAX_CLUSTER", "16")))
    consolidation_bridge_min: float = field(
        default_factory=lambda: float(_env("ENGRAMLOG_CONSOLIDATION_BRIDGE_MIN", "0.3")))
    consolidation_duplicate: float = field(
        default_factory=lambda: _positive("ENGRAMLOG_CONSOLIDATION_DUPLICATE", "0.85"))
    consolidation_edge_floor: float = field(
        default_factory=lambda: _positive("ENGRAMLOG_CONSOLIDATION_EDGE_FLOOR", "0.05"))
    consolidation_forget_age_days: float = field(
        default_factory=lambda: _positive("ENGRAMLOG_CONSOLIDATION_FORGET_AGE_DAYS", "7"))
    consolidation_forget_idle_days: float = field(
        default_factory=lambda: _positive("ENGRAMLOG_CONSOLIDATION_FORGET_IDLE_DAYS", "7"))
    consolidation_node_cap: float = field(default_factory=lambda: _positive("ENGRAMLOG_CONSOLIDATION_NODE_CAP", "4"))
    consolidation_max_memories: int = field(
        default_factory=lambda: int(_positive("ENGRAMLOG_CONSOLIDATION_MAX_MEMORIES", "2000")))
    # Scheduler (one leader across all workers, PostgreSQL advisory lock): job intervals, leader retry.
    scheduler_enabled: bool = field(
        default_factory=lambda: _env("ENGRAMLOG_SCHEDULER_ENABLED", "true").lower() not in ("0", "false", "no"))
    decay_interval_s: float = field(default_factory=lambda: _positive("ENGRAMLOG_DECAY_INTERVAL_S", "3600"))
    consolidation_interval_s: float = field(
        default_factory=lambda: _positive("ENGRAMLOG_CONSOLIDATION_INTERVAL_S", "21600"))
    scheduler_retry_s: float = field(default_factory=lambda: _positive("ENGRAMLOG_SCHEDULER_RETRY_S", "10"))

    # Recall funnel (issue 3 §3, Engineer F): cost-ordered stages, each knob with its env override.
    # Breadth: each leg fetches max(candidates_per_leg, k·topn_mult); the composite keeps the top
    # max(k·topn_mult, rerank pool) for PRF and the graph walk; the reranker sees the best `rerank_pool` of those
    # (0: max(k·4, 40)).
    topn_mult: int = field(default_factory=lambda: int(_env("ENGRAMLOG_TOPN_MULT", "8")))
    rerank_pool: int = field(default_factory=lambda: int(_env("ENGRAMLOG_RERANK_POOL", "0")))
    # Candidate generation, the only eligibility gate: BM25 matches, and vector hits with cosine >= this floor.
    sim_candidate_floor: float = field(default_factory=lambda: float(_env("ENGRAMLOG_SIM_CANDIDATE_FLOOR", "0.2")))
    # Composite: relevance (domain.ranking.fuse) × a quality factor 1 − Σw + Σ w·signal (each signal in [0, 1]).
    composite_w_activation: float = field(default_factory=lambda: float(_env("ENGRAMLOG_W_ACTIVATION", "0.10")))
    composite_w_hebbian: float = field(default_factory=lambda: float(_env("ENGRAMLOG_W_HEBBIAN", "0.05")))
    composite_w_centrality: float = field(default_factory=lambda: float(_env("ENGRAMLOG_W_CENTRALITY", "0.05")))
    composite_w_confidence: float = field(default_factory=lambda: float(_env("ENGRAMLOG_W_CONFIDENCE", "0.05")))
    composite_w_feedback: float = field(default_factory=lambda: float(_env("ENGRAMLOG_W_FEEDBACK", "0.05")))
    superseded_factor: float = field(default_factory=lambda: float(_env("ENGRAMLOG_SUPERSEDED_FACTOR", "0.1")))
    # Time in the query (domain/temporal.py): when the query names a span of time ("last Tuesday", "in May 2023"),
    # the quality factor gains a "time" signal of this weight, exp(−days from the span / ENGRAMLOG_TIME_BOOST_DAYS)
    # of the memory's occurred_at (1 inside it); a query naming no time is scored as before (no recency weight).
    composite_w_time: float = field(default_factory=lambda: float(_env("ENGRAMLOG_W_TIME", "0.3")))
    time_boost_days: float = field(default_factory=lambda: _positive("ENGRAMLOG_TIME_BOOST_DAYS", "3"))
    # Coreference: how many of the scope's most recent memories name the entity a pronoun resolves to.
    coref_recent: int = field(default_factory=lambda: int(_env("ENGRAMLOG_COREF_RECENT", "20")))
    # Pseudo-relevance feedback (Rocchio on the query vector from the top `prf_top`) and the entity boost.
    prf_top: int = field(default_factory=lambda: int(_env("ENGRAMLOG_PRF_TOP", "3")))
    prf_beta: float = field(default_factory=lambda: float(_env("ENGRAMLOG_PRF_BETA", "0.3")))
    entity_weight: float = field(default_factory=lambda: float(_env("ENGRAMLOG_ENTITY_WEIGHT", "0.1")))
    # Graph walk: beam width, depth, gain, and the edge kinds walked.
    graph_beam: int = field(default_factory=lambda: int(_env("ENGRAMLOG_GRAPH_BEAM", "5")))
    graph_depth: int = field(default_factory=lambda: int(_env("ENGRAMLOG_GRAPH_DEPTH", "2")))
    graph_gain: float = field(default_factory=lambda: float(_env("ENGRAMLOG_GRAPH_GAIN", "0.5")))
    graph_kinds: tuple[str, ...] = field(default_factory=lambda: tuple(
        k.strip() for k in _env("ENGRAMLOG_GRAPH_KINDS", "semantic,temporal,causal,entity").split(",") if k.strip()))
    # Implicit temporal edges: the memories just before/after on the agent's timeline within the window.
    graph_temporal_span: int = field(default_factory=lambda: int(_env("ENGRAMLOG_GRAPH_TEMPORAL_SPAN", "2")))
    graph_temporal_window_s: float = field(
        default_factory=lambda: float(_env("ENGRAMLOG_GRAPH_TEMPORAL_WINDOW_S", "1800")))
    graph_temporal_weight: float = field(default_factory=lambda: float(_env("ENGRAMLOG_GRAPH_TEMPORAL_WEIGHT", "0.5")))
    # Entity edges (projections/entities.py): memories of one agent that talk about the same entity, followed
    # only for entities at most `graph_entity_max_df` of the agent's memories talk about (a hub links nothing).
    graph_entity_weight: float = field(default_factory=lambda: float(_env("ENGRAMLOG_GRAPH_ENTITY_WEIGHT", "0.15")))
    graph_entity_max_df: int = field(default_factory=lambda: int(_env("ENGRAMLOG_GRAPH_ENTITY_MAX_DF", "8")))
    # Cross-encoder rerank: a local model path (sentence-transformers CrossEncoder); empty: the stage is skipped.
    reranker_model: str = field(default_factory=lambda: _env("ENGRAMLOG_RERANKER_MODEL", ""))
    reranker_max_length: int = field(default_factory=lambda: int(_env("ENGRAMLOG_RERANKER_MAX_LENGTH", "256")))
    # int8 weights for the cross-encoder on the onnx backend: p50 142 -> 85 ms at 10k memories (40 pairs), scores
    # within 0.02 of fp32 (not identical); "none" keeps fp32.
    reranker_quantize: str = field(default_factory=lambda: _choice(
        "ENGRAMLOG_RERANKER_QUANTIZE", "int8", ("none", "int8")))
    # Adaptive blend: the cross-encoder's weight grows from min to max with the spread of its scores in the pool.
    rerank_blend_min: float = field(default_factory=lambda: float(_env("ENGRAMLOG_RERANK_BLEND_MIN", "0.3")))
    rerank_blend_max: float = field(default_factory=lambda: float(_env("ENGRAMLOG_RERANK_BLEND_MAX", "0.8")))
    # Abstention gate on the post-rerank top K: channel floors, the quorum of channels that must vote relevant,
    # and the channels whose "no" abstains on its own.
    abstain_gate_k: int = field(default_factory=lambda: int(_env("ENGRAMLOG_ABSTAIN_GATE_K", "5")))
    abstain_sim_floor: float = field(default_factory=lambda: float(_env("ENGRAMLOG_ABSTAIN_SIM_FLOOR", "0.3")))
    abstain_term_floor: float = field(default_factory=lambda: float(_env("ENGRAMLOG_ABSTAIN_TERM_FLOOR", "0.3")))
    abstain_ce_floor: float = field(default_factory=lambda: float(_env("ENGRAMLOG_ABSTAIN_CE_FLOOR", "0.5")))
    abstain_entity_frac: float = field(default_factory=lambda: float(_env("ENGRAMLOG_ABSTAIN_ENTITY_FRAC", "0.7")))
    abstain_quorum: float = field(default_factory=lambda: float(_env("ENGRAMLOG_ABSTAIN_QUORUM", "0.5")))
    # The relevance channel: the best calibrated relevance (recall/relevance.py) in the top K; 0 leaves it out.
    abstain_relevance_floor: float = field(default_factory=lambda: float(
        _env("ENGRAMLOG_ABSTAIN_RELEVANCE_FLOOR", "0.2")))
    abstain_veto: tuple[str, ...] = field(default_factory=lambda: tuple(
        k.strip() for k in _env("ENGRAMLOG_ABSTAIN_VETO", "entity").split(",") if k.strip()))
    # Staging as a safety net: when the active and dormant memories do not answer (the gate abstains, or the best
    # cosine in the gate's top K is under this floor), recall runs again with staging memories included.
    staging_fallback: bool = field(
        default_factory=lambda: _env("ENGRAMLOG_STAGING_FALLBACK", "1").lower() not in ("0", "false", "no"))
    staging_fallback_sim: float = field(default_factory=lambda: float(_env("ENGRAMLOG_STAGING_FALLBACK_SIM", "0.45")))
    # recall/multi: the results all buckets share; each of the N domains that answer gets ceiling // N (at least 1).
    recall_multi_ceiling: int = field(default_factory=lambda: int(_env("ENGRAMLOG_RECALL_MULTI_CEILING", "20")))

    # Session messages (recall/domains/sessions.py, domain/sessions/): a message's text cap (413 beyond it), the
    # mix-rank weights (density·0.4 + recency·0.35 + richness·0.25, SwarmAI), recency's half-life, the distinct
    # terms at which richness is 1, the BM25 candidates ranked, and the ±messages window around each hit.
    max_session_message_chars: int = field(
        default_factory=lambda: int(_env("ENGRAMLOG_MAX_SESSION_MESSAGE_CHARS", "131072")))
    session_w_density: float = field(default_factory=lambda: float(_env("ENGRAMLOG_SESSION_W_DENSITY", "0.4")))
    session_w_recency: float = field(default_factory=lambda: float(_env("ENGRAMLOG_SESSION_W_RECENCY", "0.35")))
    session_w_richness: float = field(default_factory=lambda: float(_env("ENGRAMLOG_SESSION_W_RICHNESS", "0.25")))
    session_recency_half_life_days: float = field(
        default_factory=lambda: _positive("ENGRAMLOG_SESSION_RECENCY_HALF_LIFE_DAYS", "7"))
    session_richness_terms: int = field(
        default_factory=lambda: int(_positive("ENGRAMLOG_SESSION_RICHNESS_TERMS", "50")))
    session_candidates: int = field(default_factory=lambda: int(_positive("ENGRAMLOG_SESSION_CANDIDATES", "200")))
    session_window: int = field(default_factory=lambda: int(_env("ENGRAMLOG_SESSION_WINDOW", "10")))
    # GET /v1/sessions/{id}/resume: the token budget's default and bounds, and how many recent turns it holds.
    resume_budget_default: int = field(default_factory=lambda: int(_env("ENGRAMLOG_RESUME_BUDGET_DEFAULT", "50000")))
    resume_budget_min: int = field(default_factory=lambda: int(_env("ENGRAMLOG_RESUME_BUDGET_MIN", "20000")))
    resume_budget_max: int = field(default_factory=lambda: int(_env("ENGRAMLOG_RESUME_BUDGET_MAX", "150000")))
    resume_turns: int = field(default_factory=lambda: int(_positive("ENGRAMLOG_RESUME_TURNS", "30")))

    # Deep recall (deep_recall/, docs/deep_recall.md). The models: an OpenAI-compatible chat API or Anthropic's
    # Messages API; no model (ENGRAMLOG_LLM_MODEL empty) answers the shortcut's results. The sub-model defaults
    # to the root model.
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
    return Settings(**values)


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
