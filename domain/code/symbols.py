"""A source file's symbols and call edges, read with tree-sitter (a pure function of the file's text).

- Symbols: functions, classes (and structs, interfaces, traits, enums, types) and methods, each with its qualified
  name (`module.Class.method`), kind, signature (the definition's head, whitespace collapsed), docstring or
  leading comment, and line span (1-based, inclusive; decorators and `export` included), so its source is the
  exact slice of lines `start_line..end_line` of the file (`line_slice`).
- Calls: every call site, as (caller symbol, called name, the qualifier before it, line, and the dotted target
  when the name or its qualifier came from one of the file's imports). Code outside any symbol is the module's.
- tree-sitter is error-tolerant: source that does not parse still yields what it holds, with the count of error
  nodes and the first error's line.

Lines end at "\\n" (tree-sitter's rows), so a "\\r\\n" keeps its "\\r" in a slice.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from functools import lru_cache

from tree_sitter import Node, Parser

from domain.code.grammars import (
    CLASS_KINDS,
    GRAMMARS,
    Grammar,
    call_target,
    definition,
    leading_identifier,
    receiver_type,
    scope_name,
    text_of,
)
from domain.code.imports import imports_of
from domain.code.languages import module_of

MAX_SIGNATURE_CHARS = 300
MAX_DOC_CHARS = 1000
_PATH_LIKE = re.compile(r"[\w$]+(?:\.[\w$]+)*\Z")
_PY_STRING = re.compile(r"^[rRuUbBfF]*(\"\"\"|'''|\"|')(.*)\1$", re.DOTALL)
_COMMENT_MARKS = re.compile(r"^\s*(?:/\*\*?|\*/|\*|///?!?|#)\s?")


@dataclass(frozen=True)
class Symbol:
    qualified_name: str
    name: str
    kind: str  # function | method | class | interface | struct | enum | trait | type
    parent: str | None  # the enclosing class's (type's) qualified name, for methods
    signature: str
    doc: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class Call:
    caller: str  # the enclosing symbol's qualified name (the module's name for top-level code)
    caller_class: str | None  # the class the caller belongs to (for self./this. calls)
    callee: str  # the called name
    qualifier: str | None  # what stands before it: "self", "os.path", "P" (Rust's :: written as .)
    line: int
    import_target: str | None  # dotted target through the file's imports, e.g. "pkg.util.parse"


@dataclass(frozen=True)
class ParsedFile:
    language: str
    module: str
    symbols: tuple[Symbol, ...]
    calls: tuple[Call, ...]
    imports: dict[str, str] = field(default_factory=dict)
    errors: int = 0  # error or missing nodes: the source does not parse cleanly
    first_error_line: int | None = None


@lru_cache(maxsize=16)
def _parser(language: str) -> Parser:
    from tree_sitter_language_pack import get_parser

    return get_parser(language)  # type: ignore[arg-type]  # the pack types its names as a Literal


def line_slice(content: str, start_line: int, end_line: int) -> str:
    """Lines start_line..end_line (1-based, inclusive) of `content`, exactly, with their line endings."""
    lines = content.split("\n")
    chunk = "\n".join(lines[start_line - 1:end_line])
    return chunk + "\n" if end_line < len(lines) else chunk


def _join(*parts: str | None) -> str:
    return ".".join(p for p in parts if p)


def _span(node: Node, grammar: Grammar) -> Node:
    span = node
    while span.parent is not None and span.parent.type in grammar.wrappers:
        span = span.parent
    return span


def _lines(span: Node) -> tuple[int, int]:
    start, end = span.start_point.row + 1, span.end_point.row + 1
    if span.end_point.column == 0 and end > start:  # ends with its newline: the line after is not its
        end -= 1
    return start, end


def _signature(node: Node, source: bytes) -> str:
    body = node.child_by_field_name("body")
    value = node.child_by_field_name("value")  # JS: const f = (x) => {...}
    if body is None and value is not None:
        body = value.child_by_field_name("body")
    if body is not None and body.start_byte > node.start_byte:
        # A comment between the head and the body (`class K:  # note`) is not the signature's.
        end = min([body.start_byte, *(c.start_byte for c in node.children if "comment" in c.type)])
        head = source[node.start_byte:end].decode("utf-8", "replace")
    else:
        head = source[node.start_byte:node.end_byte].decode("utf-8", "replace").split("\n", 1)[0]
    return re.sub(r"\s+", " ", head).strip().rstrip("{:=> ").strip()[:MAX_SIGNATURE_CHARS]


def _python_docstring(node: Node) -> str | None:
    body = node.child_by_field_name("body")
    first = body.named_children[0] if body is not None and body.named_children else None
    if first is not None and first.type == "expression_statement" and first.named_children:
        first = first.named_children[0]  # grammars before 0.23 wrap the docstring in an expression statement
    string = first
    if string is None or string.type != "string":
        return None
    m = _PY_STRING.match(text_of(string))
    return inspect.cleandoc(m.group(2)) if m else None


def _leading_comment(span: Node, grammar: Grammar) -> str:
    lines: list[str] = []
    row = span.start_point.row
    prev = span.prev_named_sibling
    while prev is not None and prev.type in grammar.skip_before:
        row, prev = prev.start_point.row, prev.prev_named_sibling
    while prev is not None and prev.type in grammar.comments and prev.end_point.row >= row - 1:
        lines[:0] = text_of(prev).split("\n")
        row, prev = prev.start_point.row, prev.prev_named_sibling
    cleaned = [_COMMENT_MARKS.sub("", line).rstrip().removesuffix("*/").rstrip() for line in lines]
    return "\n".join(c for c in cleaned if c).strip()


def _doc(node: Node, span: Node, language: str, grammar: Grammar) -> str:
    doc = _python_docstring(node) if language == "python" else None
    return (doc if doc is not None else _leading_comment(span, grammar))[:MAX_DOC_CHARS]


def import_target(imports: dict[str, str], callee: str, qualifier: str | None) -> str | None:
    """The dotted target a call names through the file's imports (`u.Mul` with u → a.util: a.util.Mul), or None."""
    if qualifier is None:
        return imports.get(callee)
    head = leading_identifier(qualifier)
    if head is None or head not in imports or not _PATH_LIKE.match(qualifier):
        return None
    return f"{imports[head]}{qualifier[len(head):]}.{callee}"


def _module(root: Node, path: str, language: str) -> tuple[str, bool]:
    if language == "java":  # a Java file's module is its package
        package = next((c for c in root.named_children if c.type == "package_declaration"), None)
        name = next((text_of(c) for c in (package.named_children if package else [])
                     if c.type in ("scoped_identifier", "identifier")), "")
        return name, False
    if language == "go":  # a Go package is its folder
        folder = path.rsplit("/", 1)[0] if "/" in path else ""
        if folder:
            return folder.replace("/", "."), False
        clause = next((c for c in root.named_children if c.type == "package_clause"), None)
        return (text_of(clause.named_children[0]) if clause and clause.named_children else ""), False
    return module_of(path, language)


def _errors(root: Node) -> tuple[int, int | None]:
    if not root.has_error:
        return 0, None
    count, first, stack = 0, None, [root]
    while stack:
        n = stack.pop()
        if n.is_error or n.is_missing:
            count += 1
            row = n.start_point.row + 1
            first = row if first is None else min(first, row)
            continue
        if n.has_error:
            stack.extend(n.children)
    return count, first


@dataclass(frozen=True)
class _Ctx:
    scope: tuple[str, ...]
    cls: str | None  # the class whose self/this a call may name
    in_class: bool  # directly in a class body: a function here is a method
    caller: str


def parse_file(path: str, content: str, language: str) -> ParsedFile:
    """The symbols and calls of one file (`language` a key of GRAMMARS)."""
    grammar = GRAMMARS[language]
    source = content.encode("utf-8", "surrogatepass")
    root = _parser(language).parse(source).root_node
    module, is_index = _module(root, path, language)
    imports = imports_of(root, language, path, module, is_index)
    symbols: list[tuple[int, Symbol]] = []
    calls: list[tuple[int, Call]] = []
    stack: list[tuple[Node, _Ctx]] = [(root, _Ctx((), None, False, module))]
    while stack:
        node, ctx = stack.pop()
        inner = ctx
        if node.type in grammar.calls and (target := call_target(node, source)) is not None:
            callee, qualifier = target
            qualifier = qualifier.replace("::", ".") if qualifier else None
            calls.append((node.start_byte, Call(ctx.caller, ctx.cls, callee, qualifier, node.start_point.row + 1,
                                                import_target(imports, callee, qualifier))))
        if (d := definition(node, language)) is not None:
            kind, name = d
            scope, parent = ctx.scope, ctx.cls if ctx.in_class else None
            if node.type == "method_declaration" and language == "go":
                rt = receiver_type(node)
                scope, parent = ((rt,), _join(module, rt)) if rt else (scope, None)
            if kind == "function" and parent is not None:
                kind = "method"
            qn = _join(module, *scope, name)
            span = _span(node, grammar)
            start, end = _lines(span)
            symbols.append((span.start_byte, Symbol(qn, name, kind, parent, _signature(node, source),
                                                    _doc(node, span, language, grammar), start, end)))
            is_class = kind in CLASS_KINDS
            inner = _Ctx((*scope, name), qn if is_class else (parent or ctx.cls), is_class, qn)
        elif node.type in grammar.scopes and (sn := scope_name(node)) is not None:
            name, is_type = sn
            qn = _join(module, *ctx.scope, name)
            inner = _Ctx((*ctx.scope, name), qn if is_type else ctx.cls, is_type, ctx.caller)
        stack.extend((child, inner) for child in reversed(node.named_children))
    errors, first_error = _errors(root)
    return ParsedFile(language, module, tuple(s for _, s in sorted(symbols, key=lambda x: x[0])),
                      tuple(c for _, c in sorted(calls, key=lambda x: x[0])), imports, errors, first_error)


__all__ = ["Call", "ParsedFile", "Symbol", "import_target", "line_slice", "parse_file"]
