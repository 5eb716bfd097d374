"""A date alone on `since` / `until` (POST /v1/recall and /v1/recall/multi) is its whole UTC day: until
"2025-05-31" answers a memory of 23:30 that day and not one of 00:10 on June 1; since "2025-06-01" the reverse;
since = until = one day answers that day's. A timestamp without a zone stays 422, with the reason."""

from __future__ import annotations

import pytest
from funnel_support import project

LATE_MAY = "Odile Varga repainted the blue rowing boat in the harbour shed"
EARLY_JUNE = "Odile Varga launched the blue rowing boat from the harbour shed"
QUERY = "Odile Varga blue rowing boat harbour shed"


@pytest.fixture
def written(engine, client):
    ids = {}
    for content, at in ((LATE_MAY, "2025-05-31T23:30:00Z"), (EARLY_JUNE, "2025-06-01T00:10:00Z")):
        r = client.post("/v1/memories", json={"content": content, "occurred_at": at, "must_keep": True})
        assert r.status_code in (200, 201), r.text
        ids[content] = r.json()["memory_id"]
        position = r.json()["position"]
    project(engine, position)
    return ids[LATE_MAY], ids[EARLY_JUNE]


def _answered(client, route: str, **frame: str) -> set[str]:
    body = {"query": QUERY, **frame} | ({"domains": ["memories"]} if route.endswith("multi") else {})
    r = client.post(route, json=body)
    assert r.status_code == 200, r.text
    if route.endswith("multi"):
        return {x["memory_id"] for b in r.json()["buckets"] for x in b["results"]}
    return {x["memory_id"] for x in r.json()["results"]}


@pytest.mark.parametrize("route", ["/v1/recall", "/v1/recall/multi"])
def test_a_date_alone_is_the_whole_utc_day(client, written, route):
    late_may, early_june = written
    assert _answered(client, route) == {late_may, early_june}
    assert _answered(client, route, until="2025-05-31") == {late_may}
    assert _answered(client, route, since="2025-06-01") == {early_june}
    assert _answered(client, route, since="2025-05-31", until="2025-05-31") == {late_may}
    assert _answered(client, route, since="2025-05-31", until="2025-06-01") == {late_may, early_june}
    assert _answered(client, route, until="2025-05-30") == set()


@pytest.mark.parametrize("route", ["/v1/recall", "/v1/recall/multi"])
def test_a_timestamp_without_a_zone_stays_422_with_the_reason(client, route):
    for frame in ({"since": "2025-05-01T00:00:00"}, {"until": "2025-05-31T23:59:59"}):
        r = client.post(route, json={"query": QUERY, **frame})
        assert r.status_code == 422, r.text
        assert "needs a timezone" in r.text and "date alone" in r.text, r.text
    r = client.post(route, json={"query": QUERY, "since": "2025-06-01", "until": "2025-05-31"})
    assert r.status_code == 422 and "after until" in r.text, r.text
