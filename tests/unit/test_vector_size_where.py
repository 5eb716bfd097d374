"""The count that picks an exact scan or HNSW (recall/vector.py _size_where): an item domain's whole tenant is
counted on its vectors alone, never joined to its units (that join read every unit row); a narrowed scope, whose
filters live on the units, still is."""

from __future__ import annotations

from readmodels.item_domains import ITEM_DOMAINS
from recall.scope import Scope
from recall.vector import MEMORY_VECTORS, VectorTable, _Search, _size_where


def test_an_item_domains_whole_tenant_is_counted_on_its_vectors_alone() -> None:
    for domain in (d for d in ITEM_DOMAINS if d.vectors is not None):
        table = VectorTable.of(domain)
        where, params = _size_where(Scope("t1"), _Search(table, "m1"))
        assert where == "v.tenant = :tenant AND v.model = :model" and params == {"tenant": "t1", "model": "m1"}
        narrowed, _ = _size_where(Scope("t1", project="p1"), _Search(table, "m1"))
        assert f"EXISTS (SELECT 1 FROM {domain.table} d" in narrowed and "d.project = :project" in narrowed


def test_memories_are_counted_on_their_own_scope_columns() -> None:
    where, params = _size_where(Scope("t1", agent_id="a1"), _Search(MEMORY_VECTORS, "m1", ("active",)))
    assert "v.agent_id = :agent_id" in where and "v.model = :model" in where
    assert "status" not in where  # the count is of the scope, whatever the statuses
