"""POST /v1/recall's reference_time: a time with its zone, or the request is refused (a 422 naming the field)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from api.schemas import RecallIn


def test_reference_time_takes_an_aware_time_and_defaults_to_none() -> None:
    assert RecallIn(query="what did we do last Tuesday?").reference_time is None
    body = RecallIn(query="q", reference_time="2023-02-14T12:00:00+01:00")
    assert body.reference_time is not None and body.reference_time.astimezone(UTC) == datetime(2023, 2, 14, 11,
                                                                                               tzinfo=UTC)


@pytest.mark.parametrize("value", ["2023-02-14T12:00:00", "last Tuesday", "2023-13-01T00:00:00Z"])
def test_a_time_without_a_zone_or_no_time_is_refused(value: str) -> None:
    with pytest.raises(ValidationError) as raised:
        RecallIn(query="q", reference_time=value)
    assert raised.value.errors()[0]["loc"] == ("reference_time",)
