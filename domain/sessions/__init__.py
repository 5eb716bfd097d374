"""Session messages' pure rules: the fold of a session's events (messages.py), the mix-rank and windows
(ranking.py), and the resume context (resume.py)."""
