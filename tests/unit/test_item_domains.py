"""Each item domain's one declaration (readmodels/item_domains.py) is consistent with itself: what the projectors,
the decay sweep and the recall readers derive from it names columns its units table has and fields its status
event has."""

from __future__ import annotations

import pytest

from readmodels.item_domains import ITEM_DOMAINS, ItemDomain


@pytest.mark.parametrize("d", ITEM_DOMAINS, ids=lambda d: d.name)
def test_a_declaration_names_its_own_columns_and_fields(d: ItemDomain) -> None:
    columns = set(d.versions.columns)
    assert set(d.key_columns) | set(d.carried) | {d.created_column} <= columns
    assert d.postings.id_column == d.versions.key
    assert set(d.key_columns) <= set(d.status_event.model_fields)  # the status handler reads the key from the event
    assert {"from_status", "to_status", "clock", "inputs"} <= set(d.status_event.model_fields)


def test_names_and_projections_are_distinct() -> None:
    assert len({d.name for d in ITEM_DOMAINS}) == len({d.projection for d in ITEM_DOMAINS}) == len(ITEM_DOMAINS)
