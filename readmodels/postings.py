"""A domain's BM25 postings tables, named once for their writer (projections/postings.py) and their reader
(recall/keyword.py): postings (tenant, term, <id>, tf, length), terms (tenant, term, df) and stats (tenant,
n_docs, total_length). Named unqualified, so a rebuild's search_path redirects them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Postings:
    postings: str
    terms: str
    stats: str
    id_column: str  # the document's id in `postings`


__all__ = ["Postings"]
