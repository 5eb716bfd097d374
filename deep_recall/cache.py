"""The query cache: a deep recall's answer kept in Redis (shared by every API process) for deep_cache_ttl_s,
keyed by the SHA-256 of the scope (with the depth and the privacy policy's version, its PrivacyPolicySet position:
an answer cached under another policy is never served) and the lower-cased, whitespace-collapsed question, at most
deep_cache_entries per scope (the oldest dropped). Redis unreachable: no cache (logged), never a failure."""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import redis
import structlog

from infra.settings import Settings

log = structlog.get_logger(__name__)
PREFIX = "engramlog:deep-cache"
_clients: dict[str, redis.Redis] = {}


def _client(settings: Settings) -> redis.Redis | None:
    if not settings.stack.redis_url:
        return None
    if settings.stack.redis_url not in _clients:
        _clients[settings.stack.redis_url] = redis.Redis.from_url(settings.stack.redis_url, socket_timeout=2,
                                                            socket_connect_timeout=2)
    return _clients[settings.stack.redis_url]


def question_key(scope: dict[str, Any], question: str) -> str:
    normal = " ".join(question.lower().split())
    return hashlib.sha256((json.dumps(scope, sort_keys=True) + "\n" + normal).encode()).hexdigest()


def _scope_index(tenant: str, scope: dict[str, Any]) -> str:
    return f"{PREFIX}-index:{tenant}:{hashlib.sha256(json.dumps(scope, sort_keys=True).encode()).hexdigest()}"


def cached(settings: Settings, tenant: str, scope: dict[str, Any], question: str) -> dict[str, Any] | None:
    client = _client(settings)
    if client is None:
        return None
    try:
        raw = client.get(f"{PREFIX}:{tenant}:{question_key(scope, question)}")
    except redis.RedisError as exc:
        log.warning("deep_recall.cache_unavailable", error=str(exc))
        return None
    return None if raw is None else json.loads(raw)


def keep(settings: Settings, tenant: str, scope: dict[str, Any], question: str, answer: dict[str, Any]) -> None:
    client = _client(settings)
    if client is None:
        return
    key = f"{PREFIX}:{tenant}:{question_key(scope, question)}"
    index = _scope_index(tenant, scope)
    ttl = settings.deep.deep_cache_ttl_s
    try:
        pipe = client.pipeline()
        pipe.set(key, json.dumps(answer, default=str), ex=ttl)
        pipe.zadd(index, {key: time.time()})
        pipe.zremrangebyscore(index, 0, time.time() - ttl)  # expired entries leave the index too
        pipe.expire(index, ttl)
        pipe.execute()
        overflow = client.zrange(index, 0, -(settings.deep.deep_cache_entries + 1))  # all but the newest N
        if overflow:
            client.delete(*overflow)
            client.zrem(index, *overflow)
    except redis.RedisError as exc:
        log.warning("deep_recall.cache_unavailable", error=str(exc))


def drop_tenant(settings: Settings, tenant: str) -> int:
    """Delete every cached answer of the tenant (a forget: any of them may quote what was forgotten). Answers how
    many keys went; Redis down: 0, logged (the cache's entries then expire by their TTL)."""
    client = _client(settings)
    if client is None:
        return 0
    gone = 0
    try:
        glob = "".join("\\" + c if c in "*?[]\\" else c for c in tenant)  # the tenant's name matched literally
        for pattern in (f"{PREFIX}:{glob}:*", f"{PREFIX}-index:{glob}:*"):
            batch = list(client.scan_iter(match=pattern, count=1000))
            if batch:
                gone += int(client.delete(*batch))
    except redis.RedisError as exc:
        log.warning("deep_recall.cache_unavailable", error=str(exc))
    return gone


__all__ = ["cached", "drop_tenant", "keep", "question_key"]
