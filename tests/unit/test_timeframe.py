"""The recall's time frame (recall/timeframe.py) and its request fields: a position is a number, a timestamp is ISO
text with a zone; since after until, or a naive time, is refused; an unset frame reads the current memories."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from api.schemas import RecallIn
from domain.errors import InvalidPayload
from recall.timeframe import NOW, TimeFrame


def test_as_of_is_a_position_or_an_aware_timestamp():
    assert RecallIn(query="q", as_of=42).as_of == 42
    parsed = RecallIn.model_validate({"query": "q", "as_of": "2025-06-01T00:00:00Z"}).as_of
    assert parsed == datetime(2025, 6, 1, tzinfo=UTC)
    for bad in (-1, "2025-06-01T00:00:00", "yesterday", 1.5):
        with pytest.raises(ValidationError):
            RecallIn.model_validate({"query": "q", "as_of": bad})


def test_since_after_until_or_naive_is_refused():
    TimeFrame(datetime(2025, 1, 1, tzinfo=UTC), datetime(2025, 1, 1, tzinfo=UTC)).check()  # one instant: fine
    with pytest.raises(InvalidPayload, match="after until"):
        TimeFrame(datetime(2025, 2, 1, tzinfo=UTC), datetime(2025, 1, 1, tzinfo=UTC)).check()
    with pytest.raises(InvalidPayload, match="timezone"):
        TimeFrame(since=datetime(2025, 2, 1)).check()  # noqa: DTZ001  (naive on purpose)
    with pytest.raises(ValidationError):
        RecallIn.model_validate({"query": "q", "until": "2025-02-01T00:00:00"})


def test_the_frames_sql():
    assert NOW.memories() == "memories" and NOW.valid_sql("m.occurred_at") == "" and NOW.times() == ()
    assert NOW.explain() is None
    dated = TimeFrame(since=datetime(2025, 1, 1, tzinfo=UTC))
    assert dated.valid_sql("m.occurred_at") == " AND m.occurred_at >= :tf_since" and dated.times() == ("valid",)
    as_of = TimeFrame(as_of=7)
    assert "memory_versions" in as_of.memories() and as_of.params() == {"tf_as_of": 7}
    assert as_of.times() == ("recorded",)
    assert " IS NOT NULL" in dated.span_sql("d.started_at", "d.ended_at")
