"""The recall funnel: cost-ordered stages, cheap and wide first, precise last (issue 3 §3, AWM §4).

    coref → candidates → composite → prf (+ entity boost) → graph walk → rerank → abstention gate

One module per stage; `recall.service` runs them in order inside one read-only transaction and records what
each did (timing, counts, the knobs it used) in the answer's explanation and in the RecallServed event.
"""
