"""GET /v1/events is bounded in bytes, not only in events (settings.limits.events_page_bytes): a page of large events
is cut short and still names its next_cursor, and paging on gives every event once, in log order."""

from __future__ import annotations

import base64
import os

import api.routes.events as events_route
from infra.settings import get_settings, replace


def _ids(client, **params) -> tuple[list[str], int]:
    ids, pages, cursor = [], 0, None
    while True:
        r = client.get("/v1/events", params={"limit": 1000, **params, **({"cursor": cursor} if cursor else {})})
        assert r.status_code == 200, r.text
        pages += 1
        ids += [e["event_id"] for e in r.json()["events"]]
        cursor = r.json()["next_cursor"]
        if cursor is None:
            return ids, pages


def test_a_page_is_cut_at_its_byte_bound_and_paging_goes_on(client, monkeypatch) -> None:
    for _ in range(6):
        content = base64.b64encode(os.urandom(18_000)).decode()  # 24k characters, incompressible
        assert client.post("/v1/memories", json={"content": content}).status_code == 201
    whole, pages = _ids(client)
    assert pages == 1 and len(whole) >= 6
    settings = replace(get_settings(), events_page_bytes=50_000)  # about two large events a page
    monkeypatch.setattr(events_route, "get_settings", lambda: settings)
    cut, pages = _ids(client)
    assert cut == whole  # every event once, in log order
    assert pages >= 3, pages
