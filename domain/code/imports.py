"""A file's imports, as local name → dotted target (`from pkg.util import parse as p` → {"p": "pkg.util.parse"}),
for resolving its calls. Relative imports are made absolute against the file's module; a target outside the
repository simply never matches a symbol.
"""

from __future__ import annotations

import posixpath
import re

from tree_sitter import Node

from domain.code.grammars import text_of


def _walk(node: Node, types: frozenset[str]) -> list[Node]:
    """Every descendant of one of `types` (not below a match), iteratively: deep trees do not recurse."""
    found, stack = [], [node]
    while stack:
        n = stack.pop()
        if n.type in types:
            found.append(n)
            continue
        stack.extend(reversed(n.named_children))
    return found


def _python(root: Node, module: str, is_index: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    package = module.split(".") if is_index else module.split(".")[:-1]
    for node in _walk(root, frozenset({"import_statement", "import_from_statement"})):
        if node.type == "import_statement":
            for name in node.children_by_field_name("name"):
                if name.type == "aliased_import":
                    out[text_of(name.child_by_field_name("alias"))] = text_of(name.child_by_field_name("name"))
                else:
                    dotted = text_of(name)
                    out[dotted.split(".")[0]] = dotted.split(".")[0]
            continue
        source = node.child_by_field_name("module_name")
        base = text_of(source)
        if source is not None and source.type == "relative_import":
            dots = len(base) - len(base.lstrip("."))
            rest = base[dots:]
            up = package[:len(package) - (dots - 1)] if dots - 1 <= len(package) else []
            base = ".".join([*up, *([rest] if rest else [])])
        for name in node.children_by_field_name("name"):
            if name.type == "aliased_import":
                local, target = text_of(name.child_by_field_name("alias")), text_of(name.child_by_field_name("name"))
            else:
                local = target = text_of(name)
            out[local] = f"{base}.{target}" if base else target
    return out


def _js_module(source: str, file_dir: str) -> str:
    if source.startswith("."):
        source = posixpath.normpath(posixpath.join(file_dir, source))
    source = re.sub(r"\.(m|c)?[jt]sx?$", "", source).strip("/")
    parts = [p for p in source.split("/") if p not in ("", ".", "..")]
    if parts and parts[-1] == "index":
        parts.pop()
    return ".".join(parts)


def _javascript(root: Node, path: str) -> dict[str, str]:
    out: dict[str, str] = {}
    file_dir = posixpath.dirname(path)
    for node in _walk(root, frozenset({"import_statement"})):
        source = node.child_by_field_name("source")
        module = _js_module(text_of(source).strip("'\"`"), file_dir)
        for clause in (c for c in node.named_children if c.type == "import_clause"):
            for part in clause.named_children:
                if part.type == "identifier":  # default import: by convention named as it is exported
                    out[text_of(part)] = f"{module}.{text_of(part)}"
                elif part.type == "namespace_import":
                    ident = next((c for c in part.named_children if c.type == "identifier"), None)
                    if ident is not None:
                        out[text_of(ident)] = module
                elif part.type == "named_imports":
                    for spec in (s for s in part.named_children if s.type == "import_specifier"):
                        name = text_of(spec.child_by_field_name("name"))
                        alias = text_of(spec.child_by_field_name("alias")) or name
                        out[alias] = f"{module}.{name}"
    return out


def _go(root: Node) -> dict[str, str]:
    out: dict[str, str] = {}
    for spec in _walk(root, frozenset({"import_spec"})):
        path = text_of(spec.child_by_field_name("path")).strip('"`')
        alias = text_of(spec.child_by_field_name("name"))
        if alias in ("_", "."):
            continue
        out[alias or path.rsplit("/", 1)[-1]] = path.replace("/", ".")
    return out


def _rust_paths(node: Node, prefix: list[str], out: dict[str, str]) -> None:
    if node.type in ("identifier", "scoped_identifier", "crate", "self", "super"):
        parts = [p for p in re.split(r"::", text_of(node)) if p]
        full = prefix + parts
        if node.type == "self" or (parts and parts[-1] == "self"):  # use a::b::{self}: b itself
            full = full[:-1]
        clean = [p for p in full if p not in ("crate", "self", "super")]
        if clean:
            out[clean[-1]] = ".".join(clean)
    elif node.type == "use_as_clause":
        parts = [p for p in re.split(r"::", text_of(node.child_by_field_name("path"))) if p]
        clean = [p for p in prefix + parts if p not in ("crate", "self", "super")]
        if clean:
            out[text_of(node.child_by_field_name("alias"))] = ".".join(clean)
    elif node.type == "scoped_use_list":
        path = node.child_by_field_name("path")
        inner = prefix + ([p for p in re.split(r"::", text_of(path)) if p] if path is not None else [])
        listing = node.child_by_field_name("list")
        for child in (listing.named_children if listing is not None else []):
            _rust_paths(child, inner, out)
    elif node.type == "use_list":
        for child in node.named_children:
            _rust_paths(child, prefix, out)


def _rust(root: Node) -> dict[str, str]:
    out: dict[str, str] = {}
    for node in _walk(root, frozenset({"use_declaration"})):
        argument = node.child_by_field_name("argument")
        if argument is not None:
            _rust_paths(argument, [], out)
    return out


def _java(root: Node) -> dict[str, str]:
    out: dict[str, str] = {}
    for node in _walk(root, frozenset({"import_declaration"})):
        if any(c.type == "asterisk" for c in node.children):
            continue
        target = next((text_of(c) for c in node.named_children if c.type in ("scoped_identifier", "identifier")), "")
        if target:
            out[target.rsplit(".", 1)[-1]] = target
    return out


def imports_of(root: Node, language: str, path: str, module: str, is_index: bool) -> dict[str, str]:
    if language == "python":
        return _python(root, module, is_index)
    if language in ("javascript", "typescript", "tsx"):
        return _javascript(root, path)
    if language == "go":
        return _go(root)
    if language == "rust":
        return _rust(root)
    if language == "java":
        return _java(root)
    return {}


__all__ = ["imports_of"]
