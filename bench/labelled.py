"""Labelled recall over every domain: a fixture (memories, a knowledge library, sessions, transcripts, a code index)
loaded into one tenant, its questions asked through POST /v1/recall/multi, and every result of every bucket
labelled: does it answer its question?

The stack (`stack()`): embedded PostgreSQL + pgvector and Redis (bench/common.py start_stack), the API app with
default settings served in process (the SDK over a Starlette TestClient: the same routes, validation and
serialisation, no uvicorn), and every projector caught up by hand after the loads and between passes (what the
worker does; in process, so a loaded machine cannot starve a worker between the writes and the asks).

A question names the domain meant to answer it and a marker: the text the answering result holds (lower case), or
for code the answering symbols' qualified names. A question with no domain has no answer anywhere (every result
is a negative). Each question is asked twice: right after the loads (knowledge sections and transcript chunks
have no vector yet: they are embedded lazily from the hit-log) and once the workers caught up (those returned
have one), so both states are labelled. Shared by bench/relevance_calibration.py (fits the relevance scale) and
bench/cross_domain.py (the probe, on a fixture of its own).
"""

from __future__ import annotations

import json
import sysconfig
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

DOMAINS = ("memories", "knowledge", "sessions", "transcripts", "code")


@dataclass(frozen=True)
class Question:
    query: str
    domain: str | None  # None: nothing in the fixture answers it
    marker: str = ""  # lower-case text the answering result holds; code: the symbol's qualified names, "|" between


@dataclass(frozen=True)
class Fixture:
    name: str
    memories: tuple[str, ...]
    documents: dict[str, str]  # path -> markdown
    sessions: dict[str, list[tuple[str, str]]]  # session id -> (role, content) in order
    transcripts: dict[str, list[tuple[str, str]]]  # transcript id -> (role, content) turns
    code_modules: tuple[str, ...]  # standard-library modules (file names), copied into one repository
    questions: tuple[Question, ...]
    repo: str = field(default="stdlib")


def answers(question: Question, domain: str, result: Any) -> bool:
    """Whether a result (an SDK DomainResult) answers the question."""
    if question.domain != domain:
        return False
    if domain == "code":
        return result.handle.get("qualified_name") in question.marker.split("|")
    window = getattr(result, "fields", {}).get("window") or []  # a sessions result answers with its window
    return any(question.marker in text.lower() for text in [result.content, *(m["content"] for m in window)])


def settle() -> float:
    """Every projector caught up (the lazy vectors of what the hit-log returned too): seconds it took."""
    from infra.db import get_engine
    from projections.registry import PROJECTORS
    from projections.runner import catch_up

    started = time.perf_counter()
    for _ in range(2):  # a lazy-vector projector reads what another one's events name: twice reaches the end
        for projector in PROJECTORS.values():
            catch_up(get_engine(), projector, 1000, max_seconds=600)
    return time.perf_counter() - started


@contextmanager
def stack() -> Iterator[Any]:
    """The SDK client on the API app in process, over embedded PostgreSQL and Redis (the keyless tenant)."""
    import httpx
    from engramlog_client import Engramlog

    from bench.common import start_stack

    with start_stack():
        from fastapi.testclient import TestClient  # imported once DATABASE_URL is set: settings are read once

        from api.app import create_app
        from infra.settings import get_settings

        get_settings.cache_clear()  # the settings of the stack just started (DATABASE_URL, REDIS_URL)
        with TestClient(create_app(), base_url="http://127.0.0.1", client=("127.0.0.1", 50000)) as http, \
                Engramlog(http_client=cast(httpx.Client, http)) as client:  # a TestClient is an httpx.Client
            yield client


def load(client: Any, fixture: Fixture) -> dict[str, Any]:
    """Every domain filled over the API, then the projectors caught up."""
    started, position = time.perf_counter(), 0
    written = client.remember_many([{"content": c, "agent_id": "bench"} for c in fixture.memories])
    position = max([position, *(w.position for w in written)])
    out = client.put_documents([{"path": p, "content": c} for p, c in fixture.documents.items()])
    position = max([position, *(d.position or 0 for d in out)])
    created = datetime.now(UTC) - timedelta(days=3)
    for sid, messages in fixture.sessions.items():
        batch = [{"role": role, "content": content, "created_at": (created + timedelta(minutes=j)).isoformat()}
                 for j, (role, content) in enumerate(messages)]
        position = max(position, client.append_messages(sid, batch).position)
    for tid, turns in fixture.transcripts.items():
        body = "".join(json.dumps({"role": role, "content": content,
                                   "timestamp": (created + timedelta(seconds=30 * j)).isoformat()}) + "\n"
                       for j, (role, content) in enumerate(turns)).encode("utf-8")
        put = client.request("PUT", f"/v1/transcripts/{tid}", content=body,
                             headers={"content-type": "application/x-ndjson"})
        position = max(position, put.get("position") or 0)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in fixture.code_modules:  # what `engramlog code index` sends, one file a request
        put = client.request("POST", f"/v1/code/{fixture.repo}/files",
                             json={"files": [{"path": name, "content": (stdlib / name).read_text()}]})
        position = max(position, put.get("position") or 0)
    settled = settle()
    return {"memories": len(fixture.memories), "documents": len(fixture.documents),
            "sessions": len(fixture.sessions),
            "session_messages": sum(len(m) for m in fixture.sessions.values()),
            "transcripts": len(fixture.transcripts),
            "transcript_turns": sum(len(t) for t in fixture.transcripts.values()),
            "code_modules": len(fixture.code_modules), "questions": len(fixture.questions),
            "position": position, "load_s": round(time.perf_counter() - started, 1), "settle_s": round(settled, 1)}


def ask(client: Any, fixture: Fixture, k: int | None, passes: int = 2) -> list[dict[str, Any]]:
    """Each question asked `passes` times (the projectors caught up in between): one record per ask with its
    answer (the SDK's MultiRecalled) and its wall time."""
    asked = []
    for p in range(passes):
        if p:
            settle()
        for i, question in enumerate(fixture.questions):
            t0 = time.perf_counter()
            answer = client.recall_multi(question.query, k=k)
            asked.append({"pass": p, "question": i, "answer": answer,
                          "wall_ms": (time.perf_counter() - t0) * 1000})
    return asked


def labelled_rows(fixture: Fixture, asked: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per result of every bucket: the question, its domain, the features its relevance was judged on,
    the relevance served, and whether it answers."""
    rows = []
    for a in asked:
        question = fixture.questions[a["question"]]
        for b in a["answer"].buckets:
            for rank, r in enumerate(b.results, 1):
                rows.append({"question": a["question"], "pass": a["pass"], "domain": b.domain, "rank": rank,
                             "features": (r.explanation.get("relevance") or {}).get("features"),
                             "relevance": r.relevance, "score": r.score,
                             "label": answers(question, b.domain, r)})
    return rows


__all__ = ["DOMAINS", "Fixture", "Question", "answers", "ask", "labelled_rows", "load", "settle", "stack"]
