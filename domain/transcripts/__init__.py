"""Transcripts: verbatim session exports parsed into turns (parse.py), cut into turn-aligned chunks (chunks.py),
named by ids (ids.py). Pure."""
