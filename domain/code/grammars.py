"""Per-language knowledge of tree-sitter's grammars: which nodes define a symbol (and of what kind), which are
calls (and what they call), which are comments, and which wrap a definition (decorators, `export`).

Pure functions of tree-sitter nodes; the walker (domain/code/symbols.py) is language-neutral.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

CLASS_KINDS = frozenset({"class", "interface", "struct", "enum", "trait", "type"})
FUNCTION_KINDS = frozenset({"function", "method"})
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_GENERICS = re.compile(r"<.*", re.DOTALL)
MAX_QUALIFIER_CHARS = 200
# A qualifier is read from at most this many bytes of its receiver: in a chain `a.f().f()...` every call's
# receiver holds the whole chain before it, so reading all of it would make a file's parse quadratic.
_QUALIFIER_BYTES = 1024


@dataclass(frozen=True)
class Grammar:
    definitions: dict[str, str]  # node type → kind ("function" inside a class becomes "method")
    calls: frozenset[str]
    comments: frozenset[str] = frozenset({"comment"})
    wrappers: frozenset[str] = frozenset()  # wrap a definition: its span and leading comment are the wrapper's
    scopes: frozenset[str] = frozenset()  # name a scope without being a symbol (Rust's impl and mod)
    skip_before: frozenset[str] = frozenset()  # nodes between a comment and its definition (Rust attributes)


_JS = Grammar(
    definitions={"function_declaration": "function", "generator_function_declaration": "function",
                 "class_declaration": "class", "abstract_class_declaration": "class", "method_definition": "method",
                 "variable_declarator": "function", "interface_declaration": "interface",
                 "method_signature": "method", "abstract_method_signature": "method"},
    calls=frozenset({"call_expression", "new_expression"}),
    wrappers=frozenset({"export_statement", "lexical_declaration", "variable_declaration"}),
)
GRAMMARS: dict[str, Grammar] = {
    "python": Grammar(
        definitions={"function_definition": "function", "class_definition": "class"},
        calls=frozenset({"call"}), wrappers=frozenset({"decorated_definition"})),
    "javascript": _JS,
    "typescript": _JS,
    "tsx": _JS,
    "go": Grammar(
        definitions={"function_declaration": "function", "method_declaration": "method", "type_spec": "type"},
        calls=frozenset({"call_expression"}), wrappers=frozenset({"type_declaration"})),
    "rust": Grammar(
        definitions={"function_item": "function", "function_signature_item": "function", "struct_item": "struct",
                     "enum_item": "enum", "trait_item": "trait", "union_item": "struct", "type_item": "type"},
        calls=frozenset({"call_expression"}), comments=frozenset({"line_comment", "block_comment"}),
        scopes=frozenset({"impl_item", "mod_item"}), skip_before=frozenset({"attribute_item"})),
    "java": Grammar(
        definitions={"class_declaration": "class", "interface_declaration": "interface", "enum_declaration": "enum",
                     "record_declaration": "class", "annotation_type_declaration": "interface",
                     "method_declaration": "method", "constructor_declaration": "method"},
        calls=frozenset({"method_invocation", "object_creation_expression"}),
        comments=frozenset({"line_comment", "block_comment"})),
}


def text_of(node: Node | None) -> str:
    return "" if node is None or node.text is None else node.text.decode("utf-8", "replace")


def text_prefix(node: Node | None, source: bytes, limit: int) -> str:
    """The first `limit` bytes (at most) of a node's text, cut at a character boundary: bounded whatever the
    node's size (Node.text copies all of it)."""
    if node is None:
        return ""
    end = min(node.end_byte, node.start_byte + limit)
    while node.start_byte < end < node.end_byte and source[end] & 0xC0 == 0x80:  # inside a UTF-8 sequence
        end -= 1
    return source[node.start_byte:end].decode("utf-8", "replace")


def _qualifier(obj: Node | None, source: bytes) -> str | None:
    return "".join(text_prefix(obj, source, _QUALIFIER_BYTES).split())[:MAX_QUALIFIER_CHARS] or None


def _type_name(node: Node | None) -> str:
    """A type's bare name: `*Server` → Server, `Vec<T>` → Vec, `a::B<T>` → B."""
    raw = _GENERICS.sub("", text_of(node)).strip().lstrip("*&").strip()
    return re.split(r"::|\.", raw)[-1].strip() if raw else ""


def definition(node: Node, language: str) -> tuple[str, str] | None:
    """(kind, name) when `node` defines a symbol in `language`, else None."""
    kind = GRAMMARS[language].definitions.get(node.type)
    if kind is None:
        return None
    if node.type == "variable_declarator":  # const f = () => ...: a function only when its value is one
        value = node.child_by_field_name("value")
        if value is None or value.type not in ("arrow_function", "function_expression", "function",
                                               "generator_function"):
            return None
    if node.type == "type_spec":  # Go: type S struct{...}
        inner = node.child_by_field_name("type")
        kind = {"struct_type": "struct", "interface_type": "interface"}.get(inner.type if inner else "", "type")
    name = text_of(node.child_by_field_name("name"))
    return (kind, name) if name else None


def scope_name(node: Node) -> tuple[str, bool] | None:
    """For a Rust impl/mod: (the scope's name, whether it is a type whose functions are methods)."""
    if node.type == "impl_item":
        name = _type_name(node.child_by_field_name("type"))
        return (name, True) if name else None
    if node.type == "mod_item":
        name = text_of(node.child_by_field_name("name"))
        return (name, False) if name else None
    return None


def receiver_type(node: Node) -> str | None:
    """Go: the type a method_declaration's receiver names (`func (s *Server) Start()` → Server)."""
    receiver = node.child_by_field_name("receiver")
    if receiver is None:
        return None
    for param in receiver.named_children:
        if param.type == "parameter_declaration":
            return _type_name(param.child_by_field_name("type")) or None
    return None


def _split_target(target: Node | None, source: bytes) -> tuple[str, str | None] | None:
    """(callee name, qualifier text) of a called expression: `f` → (f, None); `a.b.f` → (f, "a.b")."""
    if target is None:
        return None
    if target.type in ("identifier", "type_identifier", "field_identifier", "property_identifier"):
        return text_of(target), None
    object_fields = {"attribute": ("object", "attribute"), "member_expression": ("object", "property"),
                     "selector_expression": ("operand", "field"), "field_expression": ("value", "field"),
                     "scoped_identifier": ("path", "name"), "generic_type": None, "generic_function": None}
    if target.type in ("generic_function", "generic_type"):  # f::<T>() / new Box<T>()
        inner = target.child_by_field_name("function") or (target.named_children[0] if target.named_children
                                                            else None)
        return _split_target(inner, source)
    fields = object_fields.get(target.type)
    if fields is None:
        return None
    obj, name = target.child_by_field_name(fields[0]), target.child_by_field_name(fields[1])
    callee = text_of(name)
    if not callee:
        return None
    return callee, _qualifier(obj, source)


def call_target(node: Node, source: bytes) -> tuple[str, str | None] | None:
    """(callee name, qualifier) of a call node, or None when it calls no name (a call of a call's result).
    `source`: the bytes the tree was parsed from."""
    if node.type == "method_invocation":  # Java: obj.name(...) / name(...)
        name = text_of(node.child_by_field_name("name"))
        obj = node.child_by_field_name("object")
        return (name, _qualifier(obj, source)) if name else None
    if node.type == "object_creation_expression":  # Java: new Foo(...)
        name = _type_name(node.child_by_field_name("type"))
        return (name, None) if name else None
    if node.type == "new_expression":  # JS: new Foo(...)
        return _split_target(node.child_by_field_name("constructor"), source)
    return _split_target(node.child_by_field_name("function"), source)


def leading_identifier(qualifier: str) -> str | None:
    m = _IDENT.match(qualifier)
    return m.group() if m else None


__all__ = ["CLASS_KINDS", "FUNCTION_KINDS", "GRAMMARS", "Grammar", "call_target", "definition", "leading_identifier",
           "receiver_type", "scope_name", "text_of", "text_prefix"]
