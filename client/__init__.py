"""A small Python client for the Engramlog HTTP API.

    from client import EngramlogClient
    with EngramlogClient("http://127.0.0.1:8000") as memory:
        written = memory.remember("Alice moved to Lisbon", agent_id="assistant")
        hits = memory.recall("where does Alice live?", agent_id="assistant", min_position=written["position"])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx


class EngramlogError(RuntimeError):
    def __init__(self, status: int, body: Any) -> None:
        super().__init__(f"HTTP {status}: {body}")
        self.status = status
        self.body = body


class EngramlogClient:
    def __init__(self, base_url: str = "http://127.0.0.1:8000", api_key: str | None = None,
                 timeout: float = 30.0) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout)

    def __enter__(self) -> EngramlogClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.http.request(method, path, **kwargs)
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = response.text
            raise EngramlogError(response.status_code, body)
        return response.json()

    def remember(self, content: str, **fields: Any) -> dict[str, Any]:
        """Record one memory; answers {memory_id, position, disposition, salience, memory_type, route, reinforced,
        supersedes}. Governance fields: must_keep=True bypasses the salience gate, signals={surprise, decision,
        causal, effort, correction} replace the text heuristics, supersedes=<id> (with reason=...) corrects a memory."""
        return self._call("POST", "/v1/memories", json={"content": content, **_drop_none(fields)})

    def remember_many(self, memories: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Record up to 1,000 memories atomically; answers [{memory_id, position}, ...] in order."""
        return self._call("POST", "/v1/memories/batch", json={"memories": memories})["memories"]

    def recall(self, query: str, k: int = 10, **filters: Any) -> dict[str, Any]:
        """Answers {recall_id, results: [{memory_id, content, score, metadata, occurred_at, explanation}]}."""
        return self._call("POST", "/v1/recall", json={"query": query, "k": k, **_drop_none(filters)})

    def append(self, events: list[dict[str, Any]], idempotency_key: str | None = None) -> list[int]:
        body = {"events": events, **_drop_none({"idempotency_key": idempotency_key})}
        return self._call("POST", "/v1/events", json=body)["positions"]

    def events(self, **filters: Any) -> dict[str, Any]:
        """One page of the log: {events, next_cursor}; pass cursor=next_cursor for the next page."""
        return self._call("GET", "/v1/events", params=_drop_none(filters))

    def memory(self, memory_id: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/memories/{memory_id}")

    def supersede(self, memory_id: str, content: str, reason: str, **fields: Any) -> dict[str, Any]:
        """Replace a memory (its scope, kind and tags are kept unless given); answers {memory_id, position,
        supersedes}. 404 if the memory is unknown, 409 if it is already superseded."""
        return self._call("POST", f"/v1/memories/{memory_id}/supersede",
                          json={"content": content, "reason": reason, **_drop_none(fields)})

    def history(self, memory_id: str) -> dict[str, Any]:
        """The supersede chain through a memory: {current, chain (oldest → newest), transitions (when, why, who)}."""
        return self._call("GET", f"/v1/memories/{memory_id}/history")

    def feedback(self, recall_id: str, used: Sequence[str] = (), not_useful: Sequence[str] = ()) -> dict[str, Any]:
        """Say which memories of a recall were used or not useful; they feed the memories' confidence."""
        items = [{"memory_id": i, "verdict": "used"} for i in used]
        items += [{"memory_id": i, "verdict": "not_useful"} for i in not_useful]
        return self._call("POST", f"/v1/recalls/{recall_id}/feedback", json={"items": items})

    def projections(self) -> list[dict[str, Any]]:
        return self._call("GET", "/v1/projections")["projections"]


def _drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}
