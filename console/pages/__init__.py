"""One module per console page group; each holds its router (console/routes.py includes them)."""
