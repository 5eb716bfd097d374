"""The log read by subject, for a forget (services/forget_plan.py, services/forget.py): which streams carry a
plain field's value, what they hold, and their data keys (eventstore/codec.py) counted and destroyed.

Only plain payload fields are searched (ids, scope, paths: never sealed); sealed content is opened through the
codec's reads (eventstore/stream.py, eventstore/query.py), never matched in SQL.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, text

from eventstore.codec import SEALED

_STREAMS_BY_FIELD = text("""
SELECT DISTINCT stream_id FROM events WHERE tenant = :tenant AND type = ANY(:types) AND data->>:field = :value
""")
_STREAM_EXISTS = text("SELECT EXISTS (SELECT 1 FROM events WHERE tenant = :tenant AND stream_id = :stream)")
# Streams whose plain payload holds one of the values as a JSON string (an id, a path, a handle's field).
_NAMING = text("""
SELECT DISTINCT stream_id, data->>'recall_id' AS recall_id FROM events
WHERE tenant = :tenant AND type = ANY(:types) AND data::text LIKE ANY(:patterns)
""")
_COUNTS = text("""
SELECT count(*) FILTER (WHERE data ? '_sealed') AS sealed, count(*) FILTER (WHERE NOT data ? '_sealed'
       AND type = ANY(:content_types)) AS unsealed, count(*) AS events
FROM events WHERE tenant = :tenant AND stream_id = ANY(:streams)
""")
_TYPES = text("SELECT DISTINCT type FROM events WHERE tenant = :tenant AND stream_id = ANY(:streams)")
_FIELD_VALUES = text("""
SELECT DISTINCT data->>:field FROM events
WHERE tenant = :tenant AND stream_id = ANY(:streams) AND type = :type AND data ? :field
""")
_POSITIONS = text("SELECT position FROM events WHERE tenant = :tenant AND stream_id = ANY(:streams)")
_KEYS = text("SELECT count(*) FROM subject_keys WHERE tenant = :tenant AND stream_id = ANY(:streams)")
_DESTROY = text("DELETE FROM subject_keys WHERE tenant = :tenant AND stream_id = ANY(:streams)")


@dataclass(frozen=True)
class SealCounts:
    sealed: int
    unsealed: int  # content-bearing events written before the codec: no key erases them (docs/forget.md)
    events: int


def streams_with(conn: Connection, tenant: str, types: Sequence[str], field: str, value: str) -> list[str]:
    """The streams with an event of one of `types` whose plain `field` is `value`."""
    return sorted(conn.execute(_STREAMS_BY_FIELD, {"tenant": tenant, "types": list(types), "field": field,
                                                    "value": value}).scalars())


def stream_exists(conn: Connection, tenant: str, stream: str) -> bool:
    return bool(conn.execute(_STREAM_EXISTS, {"tenant": tenant, "stream": stream}).scalar_one())


def _like(value: str) -> str:
    quoted = json.dumps(value, ensure_ascii=False)  # as jsonb prints a string value
    return "%" + quoted.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def streams_naming(conn: Connection, tenant: str, types: Sequence[str],
                   values: Sequence[str]) -> dict[str, str | None]:
    """stream id -> its recall_id, for the streams of `types` whose plain payload holds one of `values`."""
    if not values:
        return {}
    rows = conn.execute(_NAMING, {"tenant": tenant, "types": list(types), "patterns": [_like(v) for v in values]})
    return {r.stream_id: r.recall_id for r in rows}


def seal_counts(conn: Connection, tenant: str, streams: Sequence[str]) -> SealCounts:
    row = conn.execute(_COUNTS, {"tenant": tenant, "streams": list(streams), "content_types": sorted(SEALED)}).one()
    return SealCounts(row.sealed, row.unsealed, row.events)


def types_in(conn: Connection, tenant: str, streams: Sequence[str]) -> set[str]:
    return set(conn.execute(_TYPES, {"tenant": tenant, "streams": list(streams)}).scalars())


def field_values(conn: Connection, tenant: str, streams: Sequence[str], type_name: str, field: str) -> list[str]:
    """The distinct plain values of `field` in the streams' events of one type."""
    return sorted(conn.execute(_FIELD_VALUES, {"tenant": tenant, "streams": list(streams), "type": type_name,
                                                "field": field}).scalars())


def positions_in(conn: Connection, tenant: str, streams: Sequence[str]) -> list[int]:
    return list(conn.execute(_POSITIONS, {"tenant": tenant, "streams": list(streams)}).scalars())


def count_keys(conn: Connection, tenant: str, streams: Sequence[str]) -> int:
    return int(conn.execute(_KEYS, {"tenant": tenant, "streams": list(streams)}).scalar_one())


def destroy_keys(conn: Connection, tenant: str, streams: Sequence[str]) -> int:
    """Delete the streams' data keys: their sealed content can never be opened again, in any copy of the log."""
    return int(conn.execute(_DESTROY, {"tenant": tenant, "streams": list(streams)}).rowcount)


__all__ = ["SealCounts", "count_keys", "destroy_keys", "field_values", "positions_in", "seal_counts",
           "stream_exists", "streams_naming", "streams_with", "types_in"]
