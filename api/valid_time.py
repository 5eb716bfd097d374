"""Valid time on a recall body (`since` / `until`, recall/timeframe.py): an ISO timestamp with a timezone, or a
date alone, read as the whole UTC day — `since` its first instant (00:00:00Z), `until` its last (23:59:59.999999Z,
the filter being inclusive), so until "2025-05-31" answers everything on May 31. A timestamp without a zone is
refused (422) with the reason: which zone it meant is not ours to guess.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time
from typing import Annotated, Any

from pydantic import AwareDatetime, BeforeValidator, Field

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
NAIVE = "a timestamp needs a timezone (e.g. 2025-05-01T00:00:00Z), or give a date alone (2025-05-01: the UTC day)"


def day_bound(value: Any, end: bool) -> Any:
    """A date (text YYYY-MM-DD or a `date`) as its day's first (`end` False) or last instant in UTC; a timestamp
    without a timezone refused with the reason; anything else as it came (the datetime type checks it)."""
    if isinstance(value, str) and _DATE.fullmatch(value.strip()):
        try:
            value = date.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(f"{value.strip()} is not a day of the calendar") from None
    if isinstance(value, date) and not isinstance(value, datetime):
        return datetime.combine(value, time.max if end else time.min, tzinfo=UTC)
    if isinstance(value, str):
        try:
            parsed: datetime | None = datetime.fromisoformat(value.strip())
        except ValueError:
            parsed = None
        if parsed is not None and parsed.utcoffset() is None:
            raise ValueError(NAIVE)
    if isinstance(value, datetime) and value.utcoffset() is None:
        raise ValueError(NAIVE)
    return value


def _since(value: Any) -> Any:
    return day_bound(value, end=False)


def _until(value: Any) -> Any:
    return day_bound(value, end=True)


# The schema OpenAPI and the MCP tools list says either is taken: date-time or date.
_INPUT = AwareDatetime | date | None
ValidSince = Annotated[AwareDatetime | None, BeforeValidator(_since, json_schema_input_type=_INPUT), Field(
    description="valid time, inclusive: only what happened (occurred_at / created_at) at or after it is answered; "
                "an ISO timestamp with a timezone, or a date alone (2025-05-01: from 00:00:00Z that day)")]
ValidUntil = Annotated[AwareDatetime | None, BeforeValidator(_until, json_schema_input_type=_INPUT), Field(
    description="valid time, inclusive: only what happened (occurred_at / created_at) at or before it is answered; "
                "an ISO timestamp with a timezone, or a date alone (2025-05-31: to the end of that UTC day, "
                "everything on May 31 included)")]

__all__ = ["NAIVE", "ValidSince", "ValidUntil", "day_bound"]
