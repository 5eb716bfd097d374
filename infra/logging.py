"""structlog key-value logs; a correlation id bound in context flows into every line."""

from __future__ import annotations

import logging

import structlog


def configure_logging(level: str = "info") -> None:
    numeric = logging.getLevelName(level.upper())
    logging.basicConfig(level=numeric, format="%(message)s")
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.KeyValueRenderer(key_order=["timestamp", "level", "event", "correlation_id"],
                                                  drop_missing=True),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        cache_logger_on_first_use=True,
    )
