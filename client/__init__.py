"""A small Python client for the Engramlog HTTP API.

    from client import EngramlogClient
    with EngramlogClient("http://127.0.0.1:8000") as memory:
        memory.remember("Alice moved to Lisbon", agent_id="assistant")
        hits = memory.recall("where does Alice live?", agent_id="assistant")  # sees the write above

Causal consistency, as database client sessions give it: the client remembers the highest position it has
written (`last_position`) and sends it as `min_position` on its next recall, so a recall always sees this
client's own writes. Pass `min_position=` to choose another, or `consistent=False` to not wait at all.
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
        self.last_position = 0  # the highest position this client has written

    def _wrote(self, *positions: int | None) -> None:
        self.last_position = max([self.last_position, *(p for p in positions if p is not None)])

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
        out = self._call("POST", "/v1/memories", json={"content": content, **_drop_none(fields)})
        self._wrote(out.get("position"))
        return out

    def remember_many(self, memories: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Record up to 1,000 memories atomically; answers [{memory_id, position}, ...] in order."""
        out = self._call("POST", "/v1/memories/batch", json={"memories": memories})["memories"]
        self._wrote(*(m.get("position") for m in out))
        return out

    def recall(self, query: str, k: int = 10, consistent: bool = True, **filters: Any) -> dict[str, Any]:
        """Answers {recall_id, results: [{memory_id, content, score, metadata, occurred_at, explanation}]}.
        Waits (server side, bounded) until this client's own writes are recallable unless consistent=False."""
        if consistent and filters.get("min_position") is None and self.last_position:
            filters["min_position"] = self.last_position
        return self._call("POST", "/v1/recall", json={"query": query, "k": k, **_drop_none(filters)})

    def recall_multi(self, query: str, domains: Sequence[str] | None = None, k: int | None = None,
                     consistent: bool = True, **filters: Any) -> dict[str, Any]:
        """One query over several domains: {recall_id, buckets: [{domain, quota, results, reason}]}, one bucket per
        domain in the order asked (default: every domain with data in the scope)."""
        if consistent and filters.get("min_position") is None and self.last_position:
            filters["min_position"] = self.last_position
        body = {"query": query, "domains": list(domains) if domains is not None else None, "k": k, **filters}
        return self._call("POST", "/v1/recall/multi", json=_drop_none(body))

    def wait_recallable(self, position: int | None = None, timeout: float = 30.0) -> bool:
        """Wait until what was written up to `position` (default: this client's last write) is recallable."""
        target = self.last_position if position is None else position
        if not target:
            return True
        return bool(self._call("GET", f"/v1/positions/{target}", params={"wait": timeout})["recallable"])

    def append(self, events: list[dict[str, Any]], idempotency_key: str | None = None) -> list[int]:
        body = {"events": events, **_drop_none({"idempotency_key": idempotency_key})}
        positions = self._call("POST", "/v1/events", json=body)["positions"]
        self._wrote(*positions)
        return positions

    def events(self, **filters: Any) -> dict[str, Any]:
        """One page of the log: {events, next_cursor}; pass cursor=next_cursor for the next page."""
        return self._call("GET", "/v1/events", params=_drop_none(filters))

    def memory(self, memory_id: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/memories/{memory_id}")

    def supersede(self, memory_id: str, content: str, reason: str, **fields: Any) -> dict[str, Any]:
        """Replace a memory (its scope, kind and tags are kept unless given); answers {memory_id, position,
        supersedes}. 404 if the memory is unknown, 409 if it is already superseded."""
        out = self._call("POST", f"/v1/memories/{memory_id}/supersede",
                         json={"content": content, "reason": reason, **_drop_none(fields)})
        self._wrote(out.get("position"))
        return out

    def history(self, memory_id: str) -> dict[str, Any]:
        """The supersede chain through a memory: {current, chain (oldest → newest), transitions (when, why, who)}."""
        return self._call("GET", f"/v1/memories/{memory_id}/history")

    def feedback(self, recall_id: str, used: Sequence[str] = (), not_useful: Sequence[str] = ()) -> dict[str, Any]:
        """Say which memories of a recall were used or not useful; they feed the memories' confidence."""
        items = [{"memory_id": i, "verdict": "used"} for i in used]
        items += [{"memory_id": i, "verdict": "not_useful"} for i in not_useful]
        out = self._call("POST", f"/v1/recalls/{recall_id}/feedback", json={"items": items})
        self._wrote(out.get("position"))
        return out

    def projections(self) -> list[dict[str, Any]]:
        return self._call("GET", "/v1/projections")["projections"]


def _drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}
