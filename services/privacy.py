"""Set a tenant's privacy policy: one PrivacyPolicySet on its policy-privacy stream (an operator's write; the
route checks the key). In force from the commit: recall/privacy.py reads the policy from the log."""

from __future__ import annotations

from typing import Any

import structlog
from sqlalchemy import Engine

from domain.errors import InvalidPayload
from domain.events import PRIVACY_STREAM, NewEvent, PrivacyPolicySet, has_lone_surrogate, validate_payload
from eventstore.append import append
from infra.wake import appended

log = structlog.get_logger(__name__)


def set_privacy_policy(engine: Engine, tenant: str, policy: dict[str, Any], metadata: dict[str, Any]) -> int:
    """Validate the whole policy (InvalidPayload, nothing written) and append it. Answers its position."""
    if has_lone_surrogate(policy):
        raise InvalidPayload("PrivacyPolicySet: text must be valid Unicode (a lone surrogate \\ud800-\\udfff is not)")
    data = validate_payload(PrivacyPolicySet, policy)
    with engine.begin() as conn:
        [position] = append(conn, tenant, [NewEvent(PrivacyPolicySet.type_name(), PRIVACY_STREAM, data)], metadata)
    appended(1)
    log.info("privacy.policy_set", tenant=tenant, position=position,
             **{field: len(values) for field, values in data.items()})
    return position


__all__ = ["set_privacy_policy"]
