"""The read models' layout, described once and read by both sides: the projectors that write the tables
(projections/) and the readers that query them (recall/). Imports neither side (tests/unit/test_import_graph.py)."""
