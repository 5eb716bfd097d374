"""`engramlog events export --format parquet`: the log's events as one Parquet file written page by page (one row
group a page, so memory stays one page whatever the log's size). Payload and metadata are JSON text columns (every
event type in one schema); times are UTC timestamps. DuckDB reads it with one SELECT: SELECT * FROM 'events.parquet'.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA = pa.schema([
    ("position", pa.int64()), ("event_id", pa.string()), ("tenant", pa.string()), ("stream_id", pa.string()),
    ("stream_version", pa.int64()), ("type", pa.string()), ("schema_version", pa.int32()),
    ("data", pa.string()), ("metadata", pa.string()),
    ("occurred_at", pa.timestamp("us", tz="UTC")), ("recorded_at", pa.timestamp("us", tz="UTC")),
])


class ParquetEvents:
    """A Parquet writer of events: write(page) per page, then close()."""

    def __init__(self, path: Path) -> None:
        self.writer = pq.ParquetWriter(str(path), SCHEMA, compression="zstd")

    def write(self, events: list[Any]) -> None:
        if not events:
            return
        columns = {
            "position": [e.position for e in events], "event_id": [str(e.event_id) for e in events],
            "tenant": [e.tenant for e in events], "stream_id": [e.stream_id for e in events],
            "stream_version": [e.stream_version for e in events], "type": [e.type for e in events],
            "schema_version": [e.schema_version for e in events],
            "data": [json.dumps(e.data, ensure_ascii=False) for e in events],
            "metadata": [json.dumps(e.metadata, ensure_ascii=False) for e in events],
            "occurred_at": [e.occurred_at for e in events], "recorded_at": [e.recorded_at for e in events],
        }
        self.writer.write_table(pa.table(columns, schema=SCHEMA))

    def close(self) -> None:
        self.writer.close()


def parquet_rows(path: Path, batch_size: int = 1000) -> Iterator[dict[str, Any]]:
    """The events of an export file, one dict a row (payload and metadata parsed), a row group at a time."""
    for batch in pq.ParquetFile(str(path)).iter_batches(batch_size=batch_size):
        for row in batch.to_pylist():
            row["data"], row["metadata"] = json.loads(row["data"]), json.loads(row["metadata"])
            yield row


def parquet_count(path: Path) -> int:
    return int(pq.ParquetFile(str(path)).metadata.num_rows)
