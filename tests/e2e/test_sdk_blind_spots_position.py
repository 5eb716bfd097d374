"""The SDK's blind_spots takes min_position: a deep recall does not move last_position (a read), so the SDK
README's deep_recall then blind_spots listed nothing right after it (found by hand on engramlog up); with the deep
recall's answer position the blind spot it registered is listed at once, every time."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import sdk_support
from engramlog_client import Engramlog

api_keys, tenant_key = sdk_support.api_keys, sdk_support.tenant_key
live_server, module_worker = sdk_support.live_server, sdk_support.module_worker


@pytest.fixture
def sdk(live_server, tenant_key, module_worker) -> Iterator[Engramlog]:
    with Engramlog(live_server.url, api_key=tenant_key, timeout=60) as client:
        yield client


@pytest.fixture
def no_model(monkeypatch) -> None:
    import api.routes.deep_recall as route
    from infra.settings import get_settings, replace

    settings = replace(get_settings(), llm_model="")
    monkeypatch.setattr(route, "get_settings", lambda: settings)


def test_blind_spots_at_a_deep_recalls_position_lists_the_one_it_registered(sdk: Engramlog, no_model) -> None:
    sdk.remember("an unrelated note so the log is not empty", must_keep=True)
    for _ in range(25):
        agent = f"a-{uuid.uuid4().hex[:10]}"
        answer = sdk.deep_recall(f"who painted the {agent} barn?", agent_id=agent)
        assert answer.results == [], answer
        spots = sdk.blind_spots(agent_id=agent, min_position=answer.position)
        assert [s.recall_id for s in spots] == [answer.recall_id], spots
