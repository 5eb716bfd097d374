"""Relevance calibration per embedding model and domain, coefficients in domain/relevance.py FEATURES
order (bias, cosine, has_vector, bm25, coverage, title_only), fitted by `python -m bench.relevance_calibration`
on its own labelled fixture (bench/relevance_fixtures.py). Generated: refit rather than edit."""

# all-MiniLM-L6-v2: fitted 2026-12-02 on 492 labelled pairs (L2 0.1).
TABLE: dict[str, dict[str, list[float]]] = {'all-MiniLM-L6-v2': {'code': [-9.0124, 0.0, 0.0, 5.9578, 6.6779, 0.0],
                      'knowledge': [-5.5307, 3.8379, -1.1838, 3.9208, 8.2969, -2.1939],
                      'memories': [-8.3067, 5.625, -0.0, 4.3715, 6.6548, 0.0],
                      'sessions': [-5.7044, 0.0, 0.0, 4.6692, 7.1934, 0.0],
                      'transcripts': [-4.8665, 0.3926, -0.1313, 1.99, 6.5252, 0.0]}}

KEYWORD_ONLY: dict[str, list[float]] = {'code': [-9.0124, 0.0, 0.0, 5.9578, 6.6779, 0.0],
 'knowledge': [-5.9534, 0.0, 0.0, 4.4393, 8.9859, -2.2313],
 'memories': [-7.6851, 0.0, 0.0, 5.8209, 8.8756, 0.0],
 'sessions': [-5.7044, 0.0, 0.0, 4.6692, 7.1934, 0.0],
 'transcripts': [-4.9021, 0.0, 0.0, 2.0074, 6.5432, 0.0]}
