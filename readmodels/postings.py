"""A domain's BM25 postings tables, named once for their writer (projections/postings.py) and their reader
(recall/keyword.py): postings (tenant, term, <id>, tf, length), terms (tenant, term, df), stats (tenant,
n_docs, total_length) and, where a domain keeps them, blocks (tenant, term, bucket, postings: the postings packed
per term, readmodels/term_blocks.py). Named unqualified, so a rebuild's search_path redirects them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Postings:
    postings: str
    terms: str
    stats: str
    id_column: str  # the document's id in `postings`
    blocks: str | None = None  # the postings packed per term, where a domain keeps them (readmodels/term_blocks.py)

    @property
    def tables(self) -> tuple[str, ...]:
        """The tables, for the projector that owns them."""
        return (self.postings, self.terms, self.stats, *((self.blocks,) if self.blocks else ()))


__all__ = ["Postings"]
