"""The stack, the API, embeddings, the write path's limits, projections and workers."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from infra.settings._env import _at_least, _at_least_zero, _choice, _env, _positive, parse_api_keys


@dataclass(frozen=True)
class StackSettings:
    """The stack: data_dir, the external services, the API's address, `engramlog up`'s limits, logging."""

    data_dir: Path = field(default_factory=lambda: Path(_env("ENGRAMLOG_DATA_DIR", ".engramlog")).resolve())
    # External services; when empty the stack launcher provides embedded ones in data_dir.
    database_url: str = field(default_factory=lambda: _env("DATABASE_URL", ""))
    redis_url: str = field(default_factory=lambda: _env("REDIS_URL", ""))
    host: str = field(default_factory=lambda: _env("ENGRAMLOG_HOST", "127.0.0.1"))
    port: int = field(default_factory=lambda: int(_env("ENGRAMLOG_PORT", "8000")))
    # How long the API keeps an idle connection open. Longer than the clients' pools keep one (httpx 5 s, load
    # balancers 60 s): at uvicorn's 5 s a client reusing a connection idle just under 5 s raced the server's close,
    # and a loaded machine lost that race (the soak's ReadErrors). 75 s is nginx's default.
    keep_alive_s: int = field(default_factory=lambda: _at_least("ENGRAMLOG_KEEP_ALIVE_S", "75", 1))
    # API processes `engramlog up` runs (uvicorn --workers; `engramlog up --api-processes N`). One interpreter holds
    # at most one core (its GIL): under the soak's load it was the bound at 0.92 of a core while the machine had
    # more. Each process loads its own embedding model (~550 MB RSS); the per-process limits (position waiters, deep
    # recall's capacity) are each process's.
    api_processes: int = field(default_factory=lambda: _at_least("ENGRAMLOG_API_PROCESSES", "1", 1))
    # `engramlog up`'s stop: each child gets this long after its stop signal, then SIGKILL (stack/up.py).
    stop_grace_s: float = field(default_factory=lambda: _positive("ENGRAMLOG_STOP_GRACE_S", "10"))
    # How long `engramlog up` waits for /healthz. Its children are watched meanwhile (one that dies fails the start
    # at once), so the limit is for a slow machine: a first start exports the ONNX model, minutes on 2 busy cores.
    up_health_timeout_s: float = field(default_factory=lambda: _positive("ENGRAMLOG_UP_HEALTH_TIMEOUT_S", "600"))
    log_level: str = field(default_factory=lambda: _env("ENGRAMLOG_LOG_LEVEL", "info"))
    # Every database statement on every connection (PostgreSQL's statement_timeout, infra/db.py); 0: no limit.
    statement_timeout_s: float = field(default_factory=lambda: float(_env("ENGRAMLOG_STATEMENT_TIMEOUT_S", "60")))


@dataclass(frozen=True)
class Api:
    """The HTTP API: tenants' and operators' keys, read-your-writes waiting."""

    api_keys: dict[str, str] = field(default_factory=lambda: parse_api_keys(_env("ENGRAMLOG_API_KEYS", "")))
    # Keys allowed to run operators' actions over HTTP (rebuild touches every tenant's read models).
    operator_keys: tuple[str, ...] = field(
        default_factory=lambda: tuple(k for k in _env("ENGRAMLOG_OPERATOR_KEYS", "").split(",") if k))
    min_position_wait_s: float = field(default_factory=lambda: float(_env("ENGRAMLOG_MIN_POSITION_WAIT_S", "5")))
    # Read-your-writes waiters at once per API process; beyond it a waiting request is answered 503 at once.
    max_position_waiters: int = field(default_factory=lambda: int(_env("ENGRAMLOG_MAX_POSITION_WAITERS", "256")))


@dataclass(frozen=True)
class Embedding:
    """Embeddings: the model, its dimension, the inference backend, when knowledge sections get vectors."""

    embedding_model: str = field(default_factory=lambda: _env("ENGRAMLOG_EMBEDDING_MODEL", "all-MiniLM-L6-v2"))
    embedding_dim: int = field(default_factory=lambda: int(_env("ENGRAMLOG_EMBEDDING_DIM", "384")))
    # Query-time inference (the embedder and the reranker): "onnx" = ONNX Runtime on CPU, each model exported once
    # into data_dir/models and checked against sentence-transformers (torch, logged, when it cannot serve); "torch".
    inference_backend: str = field(default_factory=lambda: _choice(
        "ENGRAMLOG_INFERENCE_BACKEND", "onnx", ("onnx", "torch")))
    # Threads per forward pass (ONNX Runtime's intra-op threads; torch's when it serves); 0: the runtime's default,
    # a thread per core. 1 spends 20-35% less CPU an embedding when other processes keep every core busy (a pass's
    # second thread then waits for a core at its barriers), at ~3 ms more a write when they do not: measured in a soak
    # of 30 governed writes/s, the API's CPU 4% lower, writes' p50 39.5 -> 42.6 ms (docs/recall.md).
    inference_threads: int = field(default_factory=lambda: _at_least_zero("ENGRAMLOG_INFERENCE_THREADS", "0"))
    # When knowledge sections get vectors: "lazy" the first time a recall returns one or a drill fetches it (from
    # the hit-log, projections/section_vectors.py); "eager" every section of every put version.
    knowledge_embedding: str = field(default_factory=lambda: _choice(
        "ENGRAMLOG_KNOWLEDGE_EMBEDDING", "lazy", ("lazy", "eager")))


@dataclass(frozen=True)
class Limits:
    """Write path limits, and the event log's page size."""

    max_content_chars: int = field(default_factory=lambda: int(_env("ENGRAMLOG_MAX_CONTENT_CHARS", "32768")))
    # A knowledge-library document's UTF-8 size (PUT /v1/knowledge/{path}); its sections are cut from it verbatim.
    max_document_bytes: int = field(default_factory=lambda: int(_env("ENGRAMLOG_MAX_DOCUMENT_BYTES", "2097152")))
    # A source file's UTF-8 size in a code index (POST /v1/code/{repo}/files: 413 beyond it; the CLI skips it).
    max_code_file_bytes: int = field(default_factory=lambda: int(_env("ENGRAMLOG_MAX_CODE_FILE_BYTES", "1048576")))
    max_batch: int = field(default_factory=lambda: int(_env("ENGRAMLOG_MAX_BATCH", "1000")))
    # GET /v1/events: a page is cut at this many bytes of stored event data (its next_cursor goes on from there).
    events_page_bytes: int = field(
        default_factory=lambda: int(_positive("ENGRAMLOG_EVENTS_PAGE_BYTES", str(8 * 1024 * 1024))))


@dataclass(frozen=True)
class Projections:
    """Projections: batch sizes, one event's time limit, the workers' poll interval."""

    projection_batch_size: int = field(default_factory=lambda: int(_env("ENGRAMLOG_PROJECTION_BATCH", "500")))
    # A batch is cut at this many bytes of stored event data too (one large event is still a batch of one).
    projection_batch_bytes: int = field(
        default_factory=lambda: int(_positive("ENGRAMLOG_PROJECTION_BATCH_BYTES", str(16 * 1024 * 1024))))
    # One event's apply (and a batch's) runs at most this long; over it, it is one failed attempt of that event,
    # parked after MAX_EVENT_FAILURES like any failing event (projections/runner.py), so it holds no one else up.
    projection_event_timeout_s: float = field(
        default_factory=lambda: _positive("ENGRAMLOG_PROJECTION_EVENT_TIMEOUT_S", "60"))
    poll_interval_s: float = field(default_factory=lambda: float(_env("ENGRAMLOG_POLL_INTERVAL_S", "2")))
    # A recall's hit-log wake-up is sent this long after it (0: at once), so one catch-up applies the recalls of that
    # span together (infra/wake.py); nothing a client reads waits on them, a recall being a read, not a write.
    hitlog_wake_delay_ms: int = field(default_factory=lambda: _at_least_zero("ENGRAMLOG_HITLOG_WAKE_DELAY_MS", "250"))


@dataclass(frozen=True)
class Workers:
    """Worker processes, the partitions they share, the Dramatiq broker, the heartbeat."""

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
