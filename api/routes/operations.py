"""Operators' endpoints: projection status and rebuild, health, Prometheus metrics."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import Connection, Engine

from api.context import Caller, caller, engine
from api.operations_schemas import ProjectionsOut, RebuiltOut
from domain.errors import NotFound
from infra.broker import redis_client
from infra.db import ping
from infra.settings import get_settings
from projections.base import Projector
from projections.rebuild import rebuild
from projections.registry import PROJECTORS
from projections.runner import ProjectionStatus, status
from projections.tenant_progress import for_tenant
from workers import ingest_dead_letters
from workers.heartbeat import HEARTBEAT_PREFIX

router = APIRouter(tags=["operations"])


def _status_for(conn: Connection, projector: Projector, who: Caller) -> ProjectionStatus:
    """Global for operators; a tenant key sees its own events' progress only (not others' traffic)."""
    overall = status(conn, projector, None if who.operator else who.tenant)  # parked events: the tenant's own
    return overall if who.operator else for_tenant(conn, projector, overall, who.tenant)


@router.get("/v1/projections", response_model=ProjectionsOut)
def get_projections(who: Annotated[Caller, Depends(caller)],
                    db: Annotated[Engine, Depends(engine)]) -> dict[str, Any]:
    with db.connect() as conn:
        return {"projections": [asdict(_status_for(conn, p, who)) for p in PROJECTORS.values()],
                "ingest_dead_letters": ingest_dead_letters.parked_count(conn, None if who.operator else who.tenant)}


@router.post("/v1/projections/{name}/rebuild", response_model=RebuiltOut)
def post_rebuild(name: str, who: Annotated[Caller, Depends(caller)],
                 db: Annotated[Engine, Depends(engine)]) -> dict[str, Any]:
    if not who.operator:
        raise HTTPException(403, "rebuilding a projection needs an operator key (ENGRAMLOG_OPERATOR_KEYS)")
    if name not in PROJECTORS:
        raise NotFound(f"unknown projection {name!r}; known: {', '.join(PROJECTORS)}")
    checkpoint = rebuild(db, PROJECTORS[name], get_settings().projections.projection_batch_size)
    return {"projection": name, "rebuilt_to_position": checkpoint.position}


@router.get("/healthz")
def healthz(db: Annotated[Engine, Depends(engine)]) -> JSONResponse:
    down: dict[str, str] = {}
    try:
        ping(db)
    except Exception as exc:
        down["database"] = type(exc).__name__
    try:
        redis_client.ping()
        if not next(redis_client.scan_iter(f"{HEARTBEAT_PREFIX}*", count=100), None):
            down["worker"] = "no worker heartbeat"
    except Exception as exc:
        down["redis"] = type(exc).__name__
        down["worker"] = "unknown while Redis is down"
    if down:
        return JSONResponse({"status": "down", "down": down}, status_code=503)
    return JSONResponse({"status": "ok"})


@router.get("/metrics")
def metrics(who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)]) -> Response:
    # This process's counters are every tenant's traffic: operators only. A tenant key gets its own lag.
    lines = [generate_latest().decode()] if who.operator else []
    try:
        with db.connect() as conn:
            lines.append("# HELP engramlog_projection_lag_events Events not yet applied by a projection\n"
                         "# TYPE engramlog_projection_lag_events gauge\n")
            seconds = ["# HELP engramlog_projection_lag_seconds Age of the oldest unapplied event\n"
                       "# TYPE engramlog_projection_lag_seconds gauge\n"]
            parked = ["# HELP engramlog_projection_dead_letters Events a projection parked and moved past\n"
                      "# TYPE engramlog_projection_dead_letters gauge\n"]
            for p in PROJECTORS.values():
                s = _status_for(conn, p, who)
                lines.append(f'engramlog_projection_lag_events{{projection="{p.name}"}} {s.lag_events}\n')
                seconds.append(f'engramlog_projection_lag_seconds{{projection="{p.name}"}} {s.lag_seconds}\n')
                parked.append(f'engramlog_projection_dead_letters{{projection="{p.name}"}} {s.parked}\n')
            lines.extend(seconds)
            lines.extend(parked)
            waiting = ingest_dead_letters.parked_count(conn, None if who.operator else who.tenant)
            lines.append("# HELP engramlog_ingest_dead_letters Queued producer messages parked, not appended\n"
                         f"# TYPE engramlog_ingest_dead_letters gauge\nengramlog_ingest_dead_letters {waiting}\n")
    except Exception:
        pass  # the database being down must not hide this process's own metrics
    return Response("".join(lines), media_type=CONTENT_TYPE_LATEST)
