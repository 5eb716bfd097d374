"""A rebuild of `vectors` takes its tables' locks in the order the vector leg's statement first names them (its
size: the kept count, then the vectors), so a recall and the swap never wait for each other in a cycle."""

from __future__ import annotations

from projections.rebuild import _swap_order
from projections.registry import get_projector
from recall.scope import Scope
from recall.vector import MEMORY_VECTORS, _Search, _size_sql


def test_the_swap_locks_the_vectors_tables_in_the_order_the_vector_leg_names_them() -> None:
    sql, _ = _size_sql(Scope("t"), _Search(MEMORY_VECTORS, "m"))
    named = sorted(("memory_vector_counts", "memory_vectors"), key=lambda t: sql.index(f"FROM {t} "))
    assert [t for t in _swap_order(get_projector("vectors")) if t in named] == named
