"""Prometheus metrics of this process (the projection lag is read from the database at scrape time)."""

from prometheus_client import Counter, Histogram

EVENTS_APPENDED = Counter("engramlog_events_appended_total", "Events appended to the log by this process")
RECALL_LATENCY = Histogram("engramlog_recall_latency_seconds", "Recall latency, query to answer",
                           buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))
PROJECTION_EVENT_FAILURES = Counter("engramlog_projection_event_failures_total",
                                    "Times a projector failed to apply one event (before it is parked)",
                                    ["projection"])
PROJECTION_EVENTS_PARKED = Counter("engramlog_projection_events_parked_total",
                                   "Events a projector parked in projection_dead_letters and moved past",
                                   ["projection"])
INGEST_MESSAGES_DEAD_LETTERED = Counter("engramlog_ingest_messages_dead_lettered_total",
                                        "Queued producer messages that could not be appended (ingest_dead_letters)")
