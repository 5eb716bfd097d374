"""Helpers for the privacy-gate tests: a tenant whose memories are excluded each a different way (agent, project,
session, tag, and through supersede chains), and the one assertion every gated route must pass.

To extend the gate's tests to another route or domain (recall, recall/multi, the drill, part 2's domains): take
the `world` (build_privacy_world), call the route with `world.reader` (or `world.ops`), and pass the answer to
`assert_reveals_nothing_excluded(answer, world)`.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from fastapi.testclient import TestClient

SECRET_AGENT, SECRET_PROJECT, SECRET_SESSION, SECRET_TAG = "agent-secret", "proj-secret", "sess-secret", "tag-secret"
POLICY = {"exclude_agents": [SECRET_AGENT], "exclude_projects": [SECRET_PROJECT],
          "exclude_sessions": [SECRET_SESSION], "exclude_tags": [SECRET_TAG], "exclude_paths": ["hr/**"]}


@dataclass
class PrivacyWorld:
    tenant: str
    ops: TestClient  # the tenant's operator key
    reader: TestClient  # the tenant's producer key (not an operator)
    other_ops: TestClient  # another tenant's operator key
    other_tenant: str
    hidden: dict[str, uuid.UUID] = field(default_factory=dict)  # name → excluded memory
    visible: dict[str, uuid.UUID] = field(default_factory=dict)  # name → memory that stays visible
    hidden_texts: list[str] = field(default_factory=list)  # each excluded memory's content (a unique marker)
    last_position: int = 0


def _write(client: TestClient, content: str, **scope: Any) -> dict[str, Any]:
    r = client.post("/v1/memories", json={"content": content, "must_keep": True, **scope})
    assert r.status_code == 201, r.text
    return r.json()


def _supersede(client: TestClient, old: uuid.UUID, content: str, **scope: Any) -> dict[str, Any]:
    r = client.post(f"/v1/memories/{old}/supersede", json={"content": content, "reason": "corrected", **scope})
    assert r.status_code == 201, r.text
    return r.json()


def build_privacy_world(world: PrivacyWorld) -> PrivacyWorld:
    """Write the tenant's memories (through the API, as its reader): one excluded by each of agent, project,
    session and tag; a visible memory superseded by an excluded one; an excluded memory superseded by a visible
    one; visible memories; and in the other tenant, memories under the same secret names (its own policy is
    empty, so they stay visible to it). Does not set the policy."""
    marker = uuid.uuid4().hex[:8]

    def secret(name: str, **scope: Any) -> None:
        text = f"classified {name} fact {marker} zebra-{name}"
        world.hidden[name] = uuid.UUID(_write(world.reader, text, **scope)["memory_id"])
        world.hidden_texts.append(text)

    secret("by_agent", agent_id=SECRET_AGENT)
    secret("by_project", project=SECRET_PROJECT, agent_id="agent-public")
    secret("by_session", session_id=SECRET_SESSION)
    secret("by_tag", tags=["ok", SECRET_TAG])
    world.visible["plain"] = uuid.UUID(_write(world.reader, f"public harbour fact {marker}",
                                              agent_id="agent-public", tags=["ok"])["memory_id"])
    # visible → excluded: the visible one's history and links must not lead to its excluded successor
    world.visible["then_secret"] = uuid.UUID(_write(world.reader, f"public lighthouse fact {marker}",
                                                    agent_id="agent-public")["memory_id"])
    text = f"classified successor fact {marker} zebra-successor"
    done = _supersede(world.reader, world.visible["then_secret"], text, agent_id=SECRET_AGENT)
    world.hidden["successor"] = uuid.UUID(done["memory_id"])
    world.hidden_texts.append(text)
    # excluded → visible
    secret("predecessor", agent_id=SECRET_AGENT)
    done = _supersede(world.reader, world.hidden["predecessor"], f"public corrected fact {marker}",
                      agent_id="agent-public")
    world.visible["corrected"] = uuid.UUID(done["memory_id"])
    world.last_position = done["position"]
    for name in ("by_agent", "by_tag"):
        _write(world.other_ops, f"other tenant {name} fact {marker}", agent_id=SECRET_AGENT, tags=[SECRET_TAG])
    return world


def put_policy(client: TestClient, policy: dict[str, Any]) -> Any:
    return client.put("/v1/policy/privacy", json=policy)


def assert_reveals_nothing_excluded(answer: Any, world: PrivacyWorld) -> None:
    """No excluded memory's id or content anywhere in an answer (a response's JSON, or the response itself)."""
    body = answer.text if hasattr(answer, "text") else json.dumps(answer, default=str)
    for name, memory_id in world.hidden.items():
        assert str(memory_id) not in body, f"the answer names the excluded memory {name!r}: {body[:2000]}"
    for text in world.hidden_texts:  # each holds a unique "zebra-<name>": a snippet or a slice of it shows too
        marker = text[text.index("zebra-"):]
        assert text not in body and marker not in body, f"the answer holds {text!r}"


def all_events(client: TestClient, **params: Any) -> list[dict[str, Any]]:
    """Every event GET /v1/events pages through (following next_cursor to the end)."""
    out, cursor = [], None
    while True:
        r = client.get("/v1/events", params={**params, "limit": 7, **({"cursor": cursor} if cursor else {})})
        assert r.status_code == 200, r.text
        out += r.json()["events"]
        cursor = r.json()["next_cursor"]
        if cursor is None:
            return out


def privacy_clients(app: Any, tenant: str, monkeypatch: Any) -> PrivacyWorld:
    """A PrivacyWorld's keys and clients (the tenant's operator and reader keys, another tenant's operator), with
    nothing written: build_privacy_world writes its memories."""
    import api.context
    from infra.settings import get_settings, replace

    other = f"{tenant}-other"
    keys = {w: f"k{w}-{uuid.uuid4().hex}" for w in ("ops", "reader", "other_ops")}
    settings = replace(get_settings(), api_keys={keys["ops"]: tenant, keys["reader"]: tenant,
                                                 keys["other_ops"]: other},
                       operator_keys=(keys["ops"], keys["other_ops"]))
    monkeypatch.setattr(api.context, "get_settings", lambda: settings)
    clients = {w: TestClient(app, headers={"Authorization": f"Bearer {k}"}) for w, k in keys.items()}
    return PrivacyWorld(tenant, clients["ops"], clients["reader"], clients["other_ops"], other)
