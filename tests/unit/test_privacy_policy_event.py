"""PrivacyPolicySet: bounded lists of strings, path globs that can match a path, an operator's event that the
generic append paths refuse from everyone."""

from __future__ import annotations

import pytest

from domain.errors import InvalidPayload
from domain.events import (
    EVENT_TYPES,
    MAX_POLICY_ENTRIES,
    MAX_POLICY_ENTRY_CHARS,
    OperatorEvent,
    PrivacyPolicySet,
    is_operator_event,
    is_system_event,
    validate_payload,
)
from domain.privacy import PrivacyPolicy


def test_the_operator_events_are_the_privacy_policy_only() -> None:
    assert {n for n, t in EVENT_TYPES.items() if issubclass(t.schema, OperatorEvent)} == {"PrivacyPolicySet",
                                                                                           "SubjectForgotten"}
    assert is_operator_event("PrivacyPolicySet") and not is_system_event("PrivacyPolicySet")
    assert not is_operator_event("MemoryRecorded") and not is_operator_event("NoSuchEvent")


def test_a_policy_round_trips_into_the_rule() -> None:
    data = validate_payload(PrivacyPolicySet, {"exclude_paths": ["hr/**", "hr/**"], "exclude_agents": ["a"]})
    assert data == {"exclude_paths": ["hr/**"], "exclude_tags": [], "exclude_agents": ["a"], "exclude_projects": [],
                    "exclude_sessions": []}
    policy = PrivacyPolicy.of(data)
    assert policy.excludes(path="hr/salaries-2026.md") and policy.excludes(agent_id="a")
    assert not policy.excludes(path="eng/hr.md", agent_id="b")


@pytest.mark.parametrize("data", [
    {"exclude_agents": "a"}, {"exclude_agents": [1]}, {"exclude_tags": [None]}, {"exclude_agents": [""]},
    {"exclude_tags": ["t"] * (MAX_POLICY_ENTRIES + 1)}, {"exclude_projects": ["p" * (MAX_POLICY_ENTRY_CHARS + 1)]},
    {"exclude_sessions": ["a\x00b"]}, {"exclude_paths": ["/"]}, {"exclude_paths": ["../x"]},
    {"exclude_paths": ["a/./b"]}, {"exclude_paths": ["a\\b"]}, {"exclude_everything": []},
])
def test_bad_policies_are_refused_with_a_reason(data: dict[str, object]) -> None:
    with pytest.raises(InvalidPayload, match="PrivacyPolicySet"):
        validate_payload(PrivacyPolicySet, data)


def test_the_generic_append_paths_refuse_it() -> None:
    from domain.events.producers import check_message
    from services.append_events import EventInput, to_new_event

    with pytest.raises(InvalidPayload, match="operator"):
        to_new_event(EventInput("PrivacyPolicySet", {}, "policy-privacy"), None, 0)
    with pytest.raises(InvalidPayload, match="operator"):
        check_message("t", [{"type": "PrivacyPolicySet", "data": {}}], {"actor": "producer"})
