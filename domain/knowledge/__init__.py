"""The knowledge library's pure rules: document paths and their limits, and `##` sectioning."""
