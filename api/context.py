"""Per-request context: the caller's tenant (from its API key) and the event metadata it writes with."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from fastapi import Header, HTTPException, Request
from sqlalchemy import Engine

from infra.db import get_engine
from infra.loopback import host_header_is_loopback, peer_is_local
from infra.settings import get_settings

DEFAULT_TENANT = "default"
_KEY_ID_SALT = b"engramlog api key id"


@lru_cache(maxsize=1024)
def key_id(key: str) -> str:
    """A stable name for an API key in event metadata that reveals nothing of it: a slow salted hash, so that
    even a short key cannot be found from the log by trying candidates."""
    return hashlib.pbkdf2_hmac("sha256", key.encode("utf-8", "surrogateescape"), _KEY_ID_SALT, 20_000)[:6].hex()


@dataclass(frozen=True)
class Caller:
    tenant: str
    actor: str
    correlation_id: str
    causation_id: str | None
    operator: bool = False

    def metadata(self, source: str = "http") -> dict[str, Any]:
        return {"actor": self.actor, "correlation_id": self.correlation_id, "causation_id": self.causation_id,
                "source": source}


def caller(request: Request, authorization: str | None = Header(default=None),
           x_causation_id: str | None = Header(default=None)) -> Caller:
    keys = get_settings().api.api_keys
    correlation_id = request.state.correlation_id
    if not keys:
        return Caller(DEFAULT_TENANT, "anonymous", correlation_id, x_causation_id, operator=True)
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise HTTPException(401, "missing 'Authorization: Bearer <key>'", headers={"WWW-Authenticate": "Bearer"})
    # Bytes, not str: compare_digest raises on a non-ASCII str (a header is latin-1 decoded, so any byte can come).
    presented = token.encode("utf-8", "surrogateescape")
    for key, tenant in keys.items():
        if secrets.compare_digest(key.encode("utf-8", "surrogateescape"), presented):
            operator = key in get_settings().api.operator_keys
            return Caller(tenant, f"api-key:{key_id(key)}", correlation_id, x_causation_id, operator)
    raise HTTPException(401, "unknown API key", headers={"WWW-Authenticate": "Bearer"})


def loopback_refusal(client: tuple[str, int] | None, host_header: str | None) -> str | None:
    """Why a request is refused while API keys are off (the API then serves this machine only), else None."""
    if get_settings().api.api_keys:
        return None
    if not peer_is_local(client):
        return "without ENGRAMLOG_API_KEYS the API serves loopback only; this request came from another machine"
    if not host_header_is_loopback(host_header):
        return (f"without ENGRAMLOG_API_KEYS the API answers only to Host localhost, 127.0.0.1 or [::1] "
                f"(got {host_header!r})")
    return None


def engine() -> Engine:
    return get_engine()
