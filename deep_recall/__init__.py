"""Deep recall: a model writes search code that runs in a sandbox against live read-only APIs (the RLM pattern).
See docs/deep_recall.md."""
