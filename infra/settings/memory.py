"""Governance, lifecycle, consolidation and the scheduler: what the write path and the workers do to memories."""

from __future__ import annotations

from dataclasses import dataclass, field

from infra.settings._env import _actr_decay, _env, _positive


@dataclass(frozen=True)
class Governance:
    """Governance (issue 3 §1, Engineer G): the write path's salience gate, reinforce and supersede."""

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
    # A governed write waits at most this long for its scope's lock (another write in the scope), then 503.
    governance_lock_timeout_s: float = field(
        default_factory=lambda: float(_env("ENGRAMLOG_GOVERNANCE_LOCK_TIMEOUT_S", "10")))


@dataclass(frozen=True)
class Lifecycle:
    """Lifecycle (issue 3 §2): ACT-R activation, Darwinian decay."""

    # ACT-R decay exponent d of B = ln(n + 1) − d·ln(age / (n + 1)); refused outside [0.3, 0.6].
    actr_decay: float = field(default_factory=lambda: _actr_decay(_env("ENGRAMLOG_ACTR_DECAY", "0.5")))
    # Decay sweep: active → dormant after this many days unreferenced, dormant → archived after (from the last
    # reference, not from the dormant transition); staging → discarded after the TTL without reinforcement.
    dormant_after_days: float = field(default_factory=lambda: _positive("ENGRAMLOG_DORMANT_AFTER_DAYS", "30"))
    archive_after_days: float = field(default_factory=lambda: _positive("ENGRAMLOG_ARCHIVE_AFTER_DAYS", "90"))
    staging_ttl_days: float = field(default_factory=lambda: _positive("ENGRAMLOG_STAGING_TTL_DAYS", "14"))


@dataclass(frozen=True)
class Consolidation:
    """Consolidation ("sleep", issue 3 §2)."""

    # Cluster diameter (max cosine distance between any two members) and size, bridge floor, near-duplicate
    # threshold, Hebbian forget floor and its age / idleness gates, per-memory edge-weight cap, and the page size:
    # a scope of any size is read in chunks and planned in pages of this many memories.
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


@dataclass(frozen=True)
class Scheduler:
    """Scheduler (one leader across all workers, PostgreSQL advisory lock): job intervals, leader retry."""

    scheduler_enabled: bool = field(
        default_factory=lambda: _env("ENGRAMLOG_SCHEDULER_ENABLED", "true").lower() not in ("0", "false", "no"))
    decay_interval_s: float = field(default_factory=lambda: _positive("ENGRAMLOG_DECAY_INTERVAL_S", "3600"))
    consolidation_interval_s: float = field(
        default_factory=lambda: _positive("ENGRAMLOG_CONSOLIDATION_INTERVAL_S", "21600"))
    scheduler_retry_s: float = field(default_factory=lambda: _positive("ENGRAMLOG_SCHEDULER_RETRY_S", "10"))
