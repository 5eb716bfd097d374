"""PUT /v1/policy/privacy (an operator key sets its tenant's privacy policy) and GET /v1/policy/privacy."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException
from sqlalchemy import Engine

from api.context import Caller, caller, engine
from api.schemas import PrivacyPolicyIn, PrivacyPolicyOut
from recall.privacy import PolicyInForce, policy_in_force
from services.privacy import set_privacy_policy

router = APIRouter(prefix="/v1/policy", tags=["policy"])


def _out(found: PolicyInForce) -> PrivacyPolicyOut:
    return PrivacyPolicyOut(**found.policy.as_dict(), position=found.position, updated_at=found.updated_at)


@router.put("/privacy", response_model=PrivacyPolicyOut)
def put_privacy_policy(body: PrivacyPolicyIn, who: Annotated[Caller, Depends(caller)],
                       db: Annotated[Engine, Depends(engine)]) -> PrivacyPolicyOut:
    """Replace the tenant's privacy policy; in force for the very next request (read from the log)."""
    if not who.operator:
        raise HTTPException(403, "setting the privacy policy needs an operator key (ENGRAMLOG_OPERATOR_KEYS)")
    set_privacy_policy(db, who.tenant, body.model_dump(), who.metadata())
    with db.connect() as conn:
        return _out(policy_in_force(conn, who.tenant))


@router.get("/privacy", response_model=PrivacyPolicyOut)
def get_privacy_policy(who: Annotated[Caller, Depends(caller)],
                       db: Annotated[Engine, Depends(engine)]) -> PrivacyPolicyOut:
    with db.connect() as conn:
        return _out(policy_in_force(conn, who.tenant))
