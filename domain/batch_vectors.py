"""The vectors of the memories one batch admitted or changed, per scope, as one matrix (domain/governance.py): each
write of the batch is compared with all of them in one product, so a batch of n writes costs n products, not n²
Python dot calls."""

from __future__ import annotations

import uuid

import numpy as np


class BatchVectors:
    """The vectors of one scope's memories this batch admitted or changed, as one matrix: each write is compared
    with all of them in one product (a batch of n writes costs n products, not n² Python dot calls)."""

    def __init__(self, dim_hint: int = 384) -> None:
        self.ids: list[uuid.UUID] = []
        self.row: dict[uuid.UUID, int] = {}
        self.matrix = np.zeros((16, dim_hint), dtype=np.float32)
        self.alive = np.zeros(16, dtype=bool)

    def put(self, memory_id: uuid.UUID, vector: np.ndarray | None) -> None:
        """Set (or, with None, withdraw) a memory's vector."""
        i = self.row.get(memory_id)
        if i is None:
            if vector is None:
                return
            i = len(self.ids)
            if i == len(self.alive):  # grow by doubling
                self.matrix = np.concatenate([self.matrix, np.zeros_like(self.matrix)])
                self.alive = np.concatenate([self.alive, np.zeros_like(self.alive)])
            if self.matrix.shape[1] != vector.shape[0]:
                self.matrix = np.zeros((len(self.alive), vector.shape[0]), dtype=np.float32)
            self.ids.append(memory_id)
            self.row[memory_id] = i
        if vector is None:
            self.alive[i] = False
        else:
            self.matrix[i] = vector
            self.alive[i] = True

    def nearest(self, vector: np.ndarray, k: int) -> list[tuple[uuid.UUID, float]]:
        """The k most similar memories (id, cosine), most similar first; ties by id."""
        n = len(self.ids)
        if n == 0:
            return []
        cosines = np.where(self.alive[:n], self.matrix[:n] @ vector, -np.inf)
        top = np.argsort(-cosines, kind="stable")[:k]
        found = [(self.ids[i], float(cosines[i])) for i in top if np.isfinite(cosines[i])]
        return sorted(found, key=lambda x: (-x[1], str(x[0])))


__all__ = ["BatchVectors"]
