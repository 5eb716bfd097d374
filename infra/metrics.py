"""Prometheus metrics of this process (the projection lag is read from the database at scrape time)."""

from prometheus_client import Counter, Histogram

EVENTS_APPENDED = Counter("engramlog_events_appended_total", "Events appended to the log by this process")
RECALL_LATENCY = Histogram("engramlog_recall_latency_seconds", "Recall latency, query to answer",
                           buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))
