"""The tenant's privacy policy for a request: read once per request by the routes and handed to every domain.

The policy's store is another engineer's (recall/privacy.py, the PrivacyPolicySet read model); until it exists
every tenant has the empty policy."""

from __future__ import annotations

from sqlalchemy import Engine

from domain.privacy import NO_POLICY, PrivacyPolicy


def policy_for(engine: Engine, tenant: str) -> PrivacyPolicy:
    try:
        from recall.privacy import policy_of  # type: ignore[import-not-found]
    except ImportError:
        return NO_POLICY
    with engine.connect() as conn:
        return policy_of(conn, tenant)  # type: ignore[no-any-return]
