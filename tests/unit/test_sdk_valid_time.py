"""The SDK sends since / until as the server reads them: a date alone (a `date`, or a 'YYYY-MM-DD' string) as a
date, which the server takes as that whole UTC day; an aware datetime as itself, midnight included."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from engramlog_client.models.recall import MultiRecallIn, RecallIn


@pytest.mark.parametrize("model", [RecallIn, MultiRecallIn])
@pytest.mark.parametrize(("value", "sent"), [
    (date(2025, 5, 31), "2025-05-31"),
    ("2025-05-31", "2025-05-31"),
    (datetime(2025, 5, 31, tzinfo=UTC), "2025-05-31T00:00:00Z"),
    ("2025-05-31T00:00:00Z", "2025-05-31T00:00:00Z"),  # an instant, not a day
])
def test_since_and_until_are_sent_as_given(model, value, sent):
    body = model(query="q", since=value, until=value).body()
    assert body["since"] == body["until"] == sent
