"""Code intelligence's pure rules: which files are source of which language, their symbols and call edges
(tree-sitter), resolving a call to a symbol, and the terms a symbol is found by."""
