"""Read-your-writes waits for memories and keyword only: a 1,000-memory batch written through the governor is
recallable, scored on its keyword leg renormalised to weight 1, before the vectors projector has embedded it.
No worker runs in this module: the two read models are caught up by hand, vectors is not."""

from __future__ import annotations

import uuid

from fastapi.testclient import TestClient


def test_a_large_batch_is_recallable_on_its_keyword_leg_before_its_vectors_exist(app, engine, tenant, monkeypatch):
    import api.context
    from infra.settings import get_settings, replace
    from projections.registry import PROJECTORS
    from projections.runner import catch_up, has_reached

    key = f"key-{tenant}"
    settings = replace(get_settings(), api_keys={key: tenant})
    monkeypatch.setattr(api.context, "get_settings", lambda: settings)
    turns = [{"content": f"Turn {i}: shipment SHP-{uuid.UUID(int=i).hex[-6:]} left depot {i % 17} on route "
                         f"R{i % 23}", "agent_id": "import"} for i in range(1000)]
    with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as http:
        r = http.post("/v1/memories/batch", json={"memories": turns})
        assert r.status_code == 201, r.text
        written = r.json()["memories"]
        last = max(m["position"] for m in written)
        for name in ("memories", "keyword"):
            catch_up(engine, PROJECTORS[name], 500)
        with engine.connect() as conn:
            assert not has_reached(conn, PROJECTORS["vectors"], last)  # the embedder has not caught up
        target = written[321]
        answer = http.post("/v1/recall", json={"query": f"shipment SHP-{uuid.UUID(int=321).hex[-6:]}",
                                               "agent_id": "import", "min_position": last})
        assert answer.status_code == 200, answer.text
        top = answer.json()["results"][0]
        assert top["memory_id"] == target["memory_id"]
        assert top["explanation"]["cosine"] is None and "no vector yet" in top["explanation"]["note"]
