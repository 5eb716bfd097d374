"""The model clients deep recall talks to: an OpenAI-compatible chat API (hosted APIs and local servers such as
llama.cpp, vLLM, Ollama; streamed or not) and Anthropic's Messages API. Each answers the text and its token
usage; a failure is a ModelError with the reason (the loop reports it, stopped "error")."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from infra.settings import Settings

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": str}
OPENAI_URL = "https://api.openai.com/v1"
ANTHROPIC_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"


_http: httpx.Client | None = None


def _client() -> httpx.Client:
    """One client per process: connections are reused, and no SSL context is loaded per call (tens of ms)."""
    global _http
    if _http is None:
        _http = httpx.Client()
    return _http


class ModelError(Exception):
    """The model could not answer (HTTP error, unreadable reply, timeout)."""


@dataclass(frozen=True)
class Completion:
    text: str
    input_tokens: int
    output_tokens: int
    model: str
    truncated: bool = False  # the model stopped at max_tokens (finish_reason "length", stop_reason "max_tokens")


class ChatModel(Protocol):
    model: str

    def complete(self, messages: list[Message], timeout_s: float) -> Completion: ...


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) else 0


# What reading a reply of an unexpected JSON shape raises (a list for an object, a number for a text, ...).
UNREADABLE = (KeyError, IndexError, TypeError, ValueError, AttributeError)


def _object(value: Any) -> dict[str, Any]:
    """A JSON object the reply holds, {} when absent; TypeError for another kind of value."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"expected a JSON object, got {type(value).__name__}: {str(value)[:100]}")
    return value


def _text(value: Any) -> str:
    """A text the reply holds, "" when absent; TypeError for another kind of value."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"expected a text, got {type(value).__name__}: {str(value)[:100]}")
    return value


class OpenAIChat:
    """POST {base_url}/chat/completions."""

    def __init__(self, base_url: str, api_key: str, model: str, max_tokens: int, stream: bool) -> None:
        self.url = (base_url or OPENAI_URL).rstrip("/") + "/chat/completions"
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.model, self.max_tokens, self.stream = model, max_tokens, stream

    def complete(self, messages: list[Message], timeout_s: float) -> Completion:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": self.max_tokens}
        try:
            if self.stream:
                return self._streamed({**body, "stream": True, "stream_options": {"include_usage": True}},
                                      timeout_s)
            r = _client().post(self.url, json=body, headers=self.headers, timeout=timeout_s)
            if r.status_code != 200:
                raise ModelError(f"{self.url} answered {r.status_code}: {r.text[:500]}")
            data = r.json()
            usage = _object(data.get("usage"))
            choice = data["choices"][0]
            text = _text(choice["message"].get("content"))
            truncated = choice.get("finish_reason") == "length"
        except httpx.TimeoutException:
            raise ModelError(f"{self.url} timed out after {timeout_s:.1f}s") from None
        except httpx.HTTPError as exc:
            raise ModelError(f"{self.url}: {type(exc).__name__}: {exc}") from None
        except UNREADABLE as exc:  # a reply of another shape than a chat completion
            raise ModelError(f"{self.url} answered an unreadable completion: {exc!r}") from None
        return Completion(text, _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")), self.model,
                          truncated)

    def _streamed(self, body: dict[str, Any], timeout_s: float) -> Completion:
        parts: list[str] = []
        usage: dict[str, Any] = {}
        truncated = False
        with _client().stream("POST", self.url, json=body, headers=self.headers, timeout=timeout_s) as r:
            if r.status_code != 200:
                raise ModelError(f"{self.url} answered {r.status_code}: {r.read()[:500]!r}")
            for line in r.iter_lines():
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    break
                chunk = json.loads(payload)
                usage = _object(chunk.get("usage")) or usage
                for choice in chunk.get("choices") or ():
                    parts.append(_text(_object(choice.get("delta")).get("content")))
                    truncated = truncated or choice.get("finish_reason") == "length"
        return Completion("".join(parts), _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")),
                          self.model, truncated)


class AnthropicMessages:
    """POST {base_url}/v1/messages (the system prompt apart, as the API takes it)."""

    def __init__(self, base_url: str, api_key: str, model: str, max_tokens: int) -> None:
        self.url = (base_url or ANTHROPIC_URL).rstrip("/") + "/v1/messages"
        self.headers = {"x-api-key": api_key, "anthropic-version": ANTHROPIC_VERSION}
        self.model, self.max_tokens = model, max_tokens

    def complete(self, messages: list[Message], timeout_s: float) -> Completion:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens,
                                "messages": [m for m in messages if m["role"] != "system"]}
        if system:
            body["system"] = system
        try:
            r = _client().post(self.url, json=body, headers=self.headers, timeout=timeout_s)
            if r.status_code != 200:
                raise ModelError(f"{self.url} answered {r.status_code}: {r.text[:500]}")
            data = r.json()
            text = "".join(_text(b.get("text")) for b in data.get("content") or () if b.get("type") == "text")
            usage = _object(data.get("usage"))
        except httpx.TimeoutException:
            raise ModelError(f"{self.url} timed out after {timeout_s:.1f}s") from None
        except httpx.HTTPError as exc:
            raise ModelError(f"{self.url}: {type(exc).__name__}: {exc}") from None
        except UNREADABLE as exc:  # a reply of another shape than a message
            raise ModelError(f"{self.url} answered an unreadable message: {exc!r}") from None
        return Completion(text, _int(usage.get("input_tokens")), _int(usage.get("output_tokens")), self.model,
                          data.get("stop_reason") == "max_tokens")


def model_for(settings: Settings, model: str) -> ChatModel:
    llm = settings.llm
    if llm.llm_provider == "anthropic":
        return AnthropicMessages(llm.llm_base_url, llm.llm_api_key, model, llm.llm_max_tokens)
    return OpenAIChat(llm.llm_base_url, llm.llm_api_key, model, llm.llm_max_tokens, llm.llm_stream)


def configured_models(settings: Settings) -> tuple[ChatModel, ChatModel] | None:
    """The root and sub-models, or None when no model is configured."""
    llm = settings.llm
    if not llm.llm_model:
        return None
    return model_for(settings, llm.llm_model), model_for(settings, llm.llm_sub_model or llm.llm_model)


__all__ = ["AnthropicMessages", "ChatModel", "Completion", "ModelError", "OpenAIChat", "configured_models",
           "model_for"]
