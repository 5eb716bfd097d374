"""A scripted model server on loopback speaking the OpenAI chat protocol (real HTTP, streamed and not): each
model name has a queue of scripted turns, replayed in order; every request is recorded, so a test can read what
the loop sent (the feedback of the previous turn). A turn is a reply text, or a function of the request's
messages answering one. A model may be set to trickle its streamed reply (a pause between chunks), a slow
model whose every read arrives in time."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route


class Cut(str):
    """A turn the model stopped at max_tokens: answered with finish_reason "length" (stop_reason "max_tokens")."""


class Raw:
    """A turn answered with this JSON body as it is, whatever its shape (streamed: as one data line)."""

    def __init__(self, body: Any) -> None:
        self.body = body


Turn = str | Raw | Callable[[list[dict[str, Any]]], str]
ROOT, SUB = "root-model", "sub-model"


class ScriptedModels:
    def __init__(self, usage: tuple[int, int] = (100, 50)) -> None:
        self.turns: dict[str, deque[Turn]] = defaultdict(deque)
        self.requests: list[dict[str, Any]] = []
        self.usage = usage
        self.delay_s = 0.0
        self.trickle_s: dict[str, float] = {}  # model -> pause between its streamed chunks
        self.lock = threading.Lock()
        self.headers: list[dict[str, str]] = []
        self.url = ""

    def script(self, model: str, *turns: Turn) -> None:
        self.turns[model].extend(turns)

    def reset(self) -> None:
        with self.lock:
            self.turns.clear()
            self.requests.clear()
            self.headers.clear()
            self.delay_s = 0.0
            self.trickle_s.clear()

    def of(self, model: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["model"] == model]

    def _next(self, body: dict[str, Any]) -> Any:
        with self.lock:
            self.requests.append(body)
            queue = self.turns[body["model"]]
            turn = queue.popleft() if queue else "FINAL: (script exhausted)"
        if self.delay_s:
            time.sleep(self.delay_s)
        return turn(body["messages"]) if callable(turn) else turn

    async def chat(self, request: Request) -> Any:
        body = await request.json()
        from starlette.concurrency import run_in_threadpool

        text = await run_in_threadpool(self._next, body)
        if isinstance(text, Raw):
            if not body.get("stream"):
                return JSONResponse(text.body)
            raw = text.body
            return StreamingResponse(iter(["data: " + json.dumps(raw) + "\n\n", "data: [DONE]\n\n"]),
                                     media_type="text/event-stream")
        usage = {"prompt_tokens": self.usage[0], "completion_tokens": self.usage[1],
                 "total_tokens": sum(self.usage)}
        finish = "length" if isinstance(text, Cut) else "stop"
        if not body.get("stream"):
            return JSONResponse({"id": "x", "object": "chat.completion", "model": body["model"],
                                 "choices": [{"index": 0, "finish_reason": finish,
                                              "message": {"role": "assistant", "content": text}}],
                                 "usage": usage})

        trickle = self.trickle_s.get(body["model"], 0.0)

        def events() -> Iterator[str]:
            for i in range(0, len(text), 7):
                if trickle:
                    time.sleep(trickle)
                yield "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": text[i:i + 7]}}]}) + "\n\n"
            yield "data: " + json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}) + "\n\n"
            yield "data: " + json.dumps({"choices": [], "usage": usage}) + "\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")


    async def messages(self, request: Request) -> Any:
        """Anthropic's Messages API: the system prompt apart, content blocks, input/output token usage."""
        body = await request.json()
        from starlette.concurrency import run_in_threadpool

        self.headers.append(dict(request.headers))
        text = await run_in_threadpool(self._next, {**body, "messages": [
            {"role": "system", "content": body.get("system", "")}, *body["messages"]]})
        if isinstance(text, Raw):
            return JSONResponse(text.body)
        return JSONResponse({"id": "m", "type": "message", "role": "assistant", "model": body["model"],
                             "content": [{"type": "text", "text": text}],
                             "stop_reason": "max_tokens" if isinstance(text, Cut) else "end_turn",
                             "usage": {"input_tokens": self.usage[0], "output_tokens": self.usage[1]}})


def start_scripted_models() -> tuple[ScriptedModels, uvicorn.Server, threading.Thread]:
    models = ScriptedModels()
    app = Starlette(routes=[Route("/v1/chat/completions", models.chat, methods=["POST"]),
                            Route("/v1/messages", models.messages, methods=["POST"])])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    models.url = f"http://127.0.0.1:{port}/v1"
    return models, server, thread


def point_route_at(models: ScriptedModels, monkeypatch: Any, **changes: Any) -> Callable[..., None]:
    """The deep recall route's settings pointed at the scripted models (the shortcut off unless changed); answers
    a function changing them further."""
    import api.routes.deep_recall as route
    from infra.settings import get_settings, replace

    models.reset()
    state = {"settings": replace(get_settings(), llm_model=ROOT, llm_sub_model=SUB, llm_base_url=models.url,
                                 deep_shortcut_hits=1000, llm_prices='{"*": [3.0, 15.0]}', **changes)}
    monkeypatch.setattr(route, "get_settings", lambda: state["settings"])

    def configure(**more: Any) -> None:
        state["settings"] = replace(state["settings"], **more)

    return configure


def code(*lines: str) -> str:
    """A root turn holding one python block."""
    return "Let me look.\n```python\n" + "\n".join(lines) + "\n```\n"


def last_user(messages: list[dict[str, Any]]) -> str:
    return [m for m in messages if m["role"] == "user"][-1]["content"]
