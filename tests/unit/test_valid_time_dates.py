"""`since` / `until` on the recall bodies (api/valid_time.py): a date alone is its whole UTC day (since its first
instant, until its last, inclusive), a timestamp with a zone is taken as given, one without a zone is refused with
the reason, and the listed schema says a date is accepted."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from pydantic import ValidationError

from api.recall_schemas import MultiRecallIn
from api.schemas import RecallIn

BODIES = (RecallIn, MultiRecallIn)


@pytest.mark.parametrize("body", BODIES)
def test_a_date_alone_is_the_whole_utc_day(body):
    got = body(query="q", since="2025-05-01", until="2025-05-31")
    assert got.since == datetime(2025, 5, 1, tzinfo=UTC)
    assert got.until == datetime(2025, 5, 31, 23, 59, 59, 999999, tzinfo=UTC)
    # the last instant of May 31 is in; the first of June 1 is not
    assert got.until + timedelta(microseconds=1) == datetime(2025, 6, 1, tzinfo=UTC)
    same_day = body(query="q", since="2025-05-31", until="2025-05-31")
    assert same_day.since is not None and same_day.until is not None and same_day.since < same_day.until
    assert body(query="q", since=date(2025, 5, 1)).since == datetime(2025, 5, 1, tzinfo=UTC)


@pytest.mark.parametrize("body", BODIES)
def test_a_timestamp_with_a_zone_is_taken_as_given(body):
    got = body(query="q", since="2025-05-01T08:30:00+02:00", until="2025-05-31T00:00:00Z")
    assert got.since == datetime(2025, 5, 1, 6, 30, tzinfo=UTC)
    assert got.until == datetime(2025, 5, 31, tzinfo=UTC)


@pytest.mark.parametrize("body", BODIES)
@pytest.mark.parametrize("value, why", [("2025-05-01T00:00:00", "timezone"), ("2025-05-01 10:00", "timezone"),
                                        (datetime(2025, 5, 1), "timezone"),  # noqa: DTZ001 - naive on purpose
                                        ("2025-02-30", "not a day of the calendar"),
                                        ("not a date", "datetime")])
def test_naive_and_bad_values_are_refused_with_the_reason(body, value, why):
    for field in ("since", "until"):
        with pytest.raises(ValidationError) as refused:
            body(query="q", **{field: value})
        assert why in str(refused.value)


def test_the_listed_schema_takes_a_date_or_a_date_time():
    for body in BODIES:
        for field in ("since", "until"):
            prop = body.model_json_schema()["properties"][field]
            assert {"type": "string", "format": "date"} in prop["anyOf"]
            assert {"type": "string", "format": "date-time"} in prop["anyOf"]
            assert "date alone" in prop["description"]
