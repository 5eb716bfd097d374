"""Recall: the keyword leg, the hybrid, the funnel's stages, sessions."""

from __future__ import annotations

from dataclasses import dataclass, field

from infra.settings._env import _choice, _env, _positive, _share


@dataclass(frozen=True)
class Keyword:
    """Keyword leg: Okapi BM25."""

    bm25_k1: float = field(default_factory=lambda: float(_env("ENGRAMLOG_BM25_K1", "1.2")))
    # b, between 0 and 1: how much a document's length counts against its terms (0: not at all)
    bm25_b: float = field(default_factory=lambda: _share("ENGRAMLOG_BM25_B", "0.75"))
    # The memories' own b. A memory is one utterance or fact: a longer one mostly says more, not the same thing
    # at length, so its length counts less than a document's (docs/recall.md: chosen out of fold, session 24).
    memory_bm25_b: float = field(default_factory=lambda: _share("ENGRAMLOG_MEMORY_BM25_B", "0.3"))


@dataclass(frozen=True)
class Hybrid:
    """Hybrid recall (SwarmAI recipe: 0.6 vector absolute + 0.4 min-max BM25, threshold 0.10 for memory)."""

    weight_vector: float = field(default_factory=lambda: float(_env("ENGRAMLOG_WEIGHT_VECTOR", "0.6")))
    weight_keyword: float = field(default_factory=lambda: float(_env("ENGRAMLOG_WEIGHT_KEYWORD", "0.4")))
    candidates_per_leg: int = field(default_factory=lambda: int(_env("ENGRAMLOG_CANDIDATES_PER_LEG", "50")))
    score_threshold: float = field(default_factory=lambda: float(_env("ENGRAMLOG_SCORE_THRESHOLD", "0.10")))
    # Filtered vector search: exact scan when the scope holds at most this many vectors, else HNSW iterative.
    exact_scan_max_rows: int = field(default_factory=lambda: int(_env("ENGRAMLOG_EXACT_SCAN_MAX_ROWS", "20000")))
    hnsw_ef_search: int = field(default_factory=lambda: int(_env("ENGRAMLOG_HNSW_EF_SEARCH", "100")))


@dataclass(frozen=True)
class Funnel:
    """Recall funnel (issue 3 §3, Engineer F): cost-ordered stages (graph, rerank, abstention: their own groups)."""

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
    # A question does not answer one: the composite is × (1 − this × the memory's question share), the share of its
    # terms in its questions (domain.entities.question_share; 0 turns it off). "What made you decide to adopt?"
    # shares the query's words; the reply that follows it answers.
    question_penalty: float = field(default_factory=lambda: _share("ENGRAMLOG_QUESTION_PENALTY", "0.5"))
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
    # recall/multi: the results all buckets share; each of the N domains that answer gets ceiling // N (at least 1).
    recall_multi_ceiling: int = field(default_factory=lambda: int(_env("ENGRAMLOG_RECALL_MULTI_CEILING", "20")))


@dataclass(frozen=True)
class Graph:
    """The recall funnel's graph walk."""

    # Beam width, depth, gain, and the edge kinds walked.
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


@dataclass(frozen=True)
class Rerank:
    """The recall funnel's cross-encoder rerank."""

    # A local model path (sentence-transformers CrossEncoder); empty: the stage is skipped.
    reranker_model: str = field(default_factory=lambda: _env("ENGRAMLOG_RERANKER_MODEL", ""))
    reranker_max_length: int = field(default_factory=lambda: int(_env("ENGRAMLOG_RERANKER_MAX_LENGTH", "256")))
    # int8 weights for the cross-encoder on the onnx backend: p50 142 -> 85 ms at 10k memories (40 pairs), scores
    # within 0.02 of fp32 (not identical); "none" keeps fp32.
    reranker_quantize: str = field(default_factory=lambda: _choice(
        "ENGRAMLOG_RERANKER_QUANTIZE", "int8", ("none", "int8")))
    # Adaptive blend: the cross-encoder's weight grows from min to max with the spread of its scores in the pool.
    rerank_blend_min: float = field(default_factory=lambda: float(_env("ENGRAMLOG_RERANK_BLEND_MIN", "0.3")))
    rerank_blend_max: float = field(default_factory=lambda: float(_env("ENGRAMLOG_RERANK_BLEND_MAX", "0.8")))


@dataclass(frozen=True)
class Abstention:
    """The recall funnel's abstention gate, and staging as a safety net."""

    # Abstention gate on the post-rerank top K: channel floors, the quorum of channels that must vote relevant,
    # and the channels whose "no" abstains on its own.
    abstain_gate_k: int = field(default_factory=lambda: int(_env("ENGRAMLOG_ABSTAIN_GATE_K", "5")))
    abstain_sim_floor: float = field(default_factory=lambda: float(_env("ENGRAMLOG_ABSTAIN_SIM_FLOOR", "0.3")))
    abstain_term_floor: float = field(default_factory=lambda: float(_env("ENGRAMLOG_ABSTAIN_TERM_FLOOR", "0.3")))
    abstain_ce_floor: float = field(default_factory=lambda: float(_env("ENGRAMLOG_ABSTAIN_CE_FLOOR", "0.5")))
    abstain_entity_frac: float = field(default_factory=lambda: float(_env("ENGRAMLOG_ABSTAIN_ENTITY_FRAC", "0.7")))
    # The entity channel also wants one of the first this many of the top K about a named entity (0: not asked).
    abstain_entity_top: int = field(default_factory=lambda: int(_env("ENGRAMLOG_ABSTAIN_ENTITY_TOP", "2")))
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


@dataclass(frozen=True)
class Sessions:
    """Session messages (recall/domains/sessions.py, domain/sessions/) and their resume."""

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
