"""The `privacy_policies` read model: each tenant's privacy policy in force, one row per tenant.

A PrivacyPolicySet replaces the whole policy, so the row is the latest event's payload (as the log stores it),
its position and its recorded time: from the event alone, never the clock, so a rebuild gives the same rows.
Recall and the routes read the policy from the log itself (recall/privacy.py: in force from the PUT's commit);
this table is the policies at a glance, for operators and analysts. The projector also keeps
analytics_subject_events (projections/subject_visibility.py): which document, session, transcript and code events
the policy hides, for the analytics views.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from sqlalchemy import Connection, text

from domain.events import PrivacyPolicySet, RecordedEvent
from projections.base import OneByOne, apply_in_order, types_of
from projections.subject_visibility import SUBJECT_TYPES, policy_set, subject_event

# `position <` : applied once, and a replay never puts an older policy over a newer one.
_UPSERT = text("""
INSERT INTO privacy_policies (tenant, policy, position, updated_at)
VALUES (:tenant, CAST(:policy AS jsonb), :position, :updated_at)
ON CONFLICT (tenant) DO UPDATE SET policy = EXCLUDED.policy, position = EXCLUDED.position,
                                   updated_at = EXCLUDED.updated_at
WHERE privacy_policies.position < EXCLUDED.position
""")


def _policy_set(conn: Connection, event: RecordedEvent, p: PrivacyPolicySet) -> None:
    conn.execute(_UPSERT, {"tenant": event.tenant, "policy": json.dumps(p.model_dump(mode="json")),
                           "position": event.position, "updated_at": event.recorded_at})
    policy_set(conn, event)


_ONE_BY_ONE: OneByOne = {PrivacyPolicySet: _policy_set, **{t: subject_event for t in SUBJECT_TYPES}}


class PrivacyProjector:
    name = "privacy"
    tables = ("privacy_policies", "analytics_subject_events")
    handlers = _ONE_BY_ONE
    types = types_of(handlers)

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        apply_in_order(conn, events, self.handlers)
