"""Per-request context: the caller's tenant (from its API key) and the event metadata it writes with."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from fastapi import Header, HTTPException, Request
from sqlalchemy import Engine

from infra.db import get_engine
from infra.settings import get_settings

DEFAULT_TENANT = "default"


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
    keys = get_settings().api_keys
    correlation_id = request.state.correlation_id
    if not keys:
        return Caller(DEFAULT_TENANT, "anonymous", correlation_id, x_causation_id, operator=True)
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise HTTPException(401, "missing 'Authorization: Bearer <key>'", headers={"WWW-Authenticate": "Bearer"})
    for key, tenant in keys.items():
        if secrets.compare_digest(key, token):
            operator = key in get_settings().operator_keys
            return Caller(tenant, f"api-key:{key[:4]}…", correlation_id, x_causation_id, operator)
    raise HTTPException(401, "unknown API key", headers={"WWW-Authenticate": "Bearer"})


def engine() -> Engine:
    return get_engine()
