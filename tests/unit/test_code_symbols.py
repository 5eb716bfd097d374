"""Symbols and call edges read with tree-sitter (domain/code/symbols.py) and calls resolved (domain/code/resolve.py),
for each supported language on small fixtures: a method call, an imported function and an ambiguous name."""

from __future__ import annotations

import pytest

from domain.code.languages import language_of
from domain.code.resolve import CallSite, Resolution, SymbolRef, resolve, target_name
from domain.code.symbols import ParsedFile, line_slice, parse_file
from domain.code.terms import query_terms, split_identifiers


def parse_repo(files: dict[str, str]) -> dict[str, ParsedFile]:
    return {path: parse_file(path, text, language_of(path) or "") for path, text in files.items()}


def resolved(files: dict[str, str]) -> dict[tuple[str, str], Resolution]:
    """(caller, callee) → resolution, as the projector resolves them: against every symbol of the repository."""
    parsed = parse_repo(files)
    refs = [SymbolRef(s.qualified_name, s.name, path, s.parent) for path, p in parsed.items() for s in p.symbols]
    out = {}
    for path, p in parsed.items():
        for c in p.calls:
            site = CallSite(path, c.caller_class, c.callee, c.qualifier, c.import_target)
            out[(c.caller, c.callee)] = resolve(site, [r for r in refs if r.name == target_name(site)])
    return out


def symbol(parsed: ParsedFile, qualified_name: str):
    return next(s for s in parsed.symbols if s.qualified_name == qualified_name)


PYTHON = {
    "pkg/util.py": 'def helper(x):\n    """Help with x."""\n    return x\n\n\ndef save():\n    pass\n',
    "pkg/store.py": "def save():\n    pass\n",
    "pkg/app.py": (
        "from .util import helper as h\n\n\n"
        "@decorated\n"
        "def main():\n    h(1)\n    save()\n    Service().run()\n\n\n"
        "class Service:\n    # a service\n    def run(self):\n        self.step()\n\n"
        "    def step(self) -> None:\n        pass\n"),
}


def test_python_symbols_spans_and_docstrings() -> None:
    parsed = parse_repo(PYTHON)
    app = parsed["pkg/app.py"]
    assert [(s.qualified_name, s.kind) for s in app.symbols] == [
        ("pkg.app.main", "function"), ("pkg.app.Service", "class"), ("pkg.app.Service.run", "method"),
        ("pkg.app.Service.step", "method")]
    main = symbol(app, "pkg.app.main")
    assert (main.start_line, main.end_line) == (4, 8)  # the decorator is the definition's
    assert line_slice(PYTHON["pkg/app.py"], main.start_line, main.end_line).startswith("@decorated\ndef main():\n")
    step = symbol(app, "pkg.app.Service.step")
    assert step.signature == "def step(self) -> None" and step.parent == "pkg.app.Service"
    assert symbol(parsed["pkg/util.py"], "pkg.util.helper").doc == "Help with x."
    assert app.imports == {"h": "pkg.util.helper"} and app.errors == 0


def test_python_calls_resolved_through_imports_self_and_ambiguity() -> None:
    r = resolved(PYTHON)
    assert (r[("pkg.app.main", "h")].qualified_name, r[("pkg.app.main", "h")].how) == ("pkg.util.helper", "import")
    assert (r[("pkg.app.Service.run", "step")].qualified_name, r[("pkg.app.Service.run", "step")].how) == (
        "pkg.app.Service.step", "self")  # a method call on self
    assert r[("pkg.app.main", "Service")].qualified_name == "pkg.app.Service"
    ambiguous = r[("pkg.app.main", "save")]  # defined in util.py and in store.py, imported from neither
    assert (ambiguous.qualified_name, ambiguous.candidates, ambiguous.how) == (None, 2, "ambiguous")
    assert r[("pkg.app.main", "run")].qualified_name == "pkg.app.Service.run"  # the only `run`


JAVASCRIPT = {
    "web/lib/format.js": "export function pad(s) { return s; }\nexport function save() {}\n",
    "web/lib/store.js": "export function save() {}\n",
    "web/app.js": (
        "import { pad as p } from './lib/format';\n"
        "// Renders a row.\n"
        "export function render(row) { return p(row) + save(); }\n"
        "class View { draw() { this.paint(); render(1); } paint() {} }\n"
        "const go = (x) => new View();\n"),
}


def test_javascript_symbols_and_calls() -> None:
    parsed = parse_repo(JAVASCRIPT)["web/app.js"]
    assert [(s.qualified_name, s.kind) for s in parsed.symbols] == [
        ("web.app.render", "function"), ("web.app.View", "class"), ("web.app.View.draw", "method"),
        ("web.app.View.paint", "method"), ("web.app.go", "function")]
    assert symbol(parsed, "web.app.render").doc == "Renders a row."
    r = resolved(JAVASCRIPT)
    assert (r[("web.app.render", "p")].qualified_name, r[("web.app.render", "p")].how) == ("web.lib.format.pad",
                                                                                          "import")
    assert r[("web.app.View.draw", "paint")].qualified_name == "web.app.View.paint"
    assert r[("web.app.render", "save")].candidates == 2 and r[("web.app.render", "save")].qualified_name is None
    assert r[("web.app.go", "View")].qualified_name == "web.app.View"  # new View()


TYPESCRIPT = {
    "src/util/math.ts": "export function add(a: number, b: number): number { return a + b; }\n",
    "src/shapes.ts": (
        "import { add } from './util/math';\n"
        "/** A shape. */\n"
        "export class Square implements Shape {\n"
        "  area(): number { return this.side() * add(1, 2); }\n"
        "  side(): number { return 1; }\n"
        "}\n"
        "interface Shape { area(): number }\n"),
}


def test_typescript_symbols_and_calls() -> None:
    parsed = parse_repo(TYPESCRIPT)["src/shapes.ts"]
    square = symbol(parsed, "src.shapes.Square")
    assert (square.kind, square.doc, square.start_line, square.end_line) == ("class", "A shape.", 3, 6)
    assert symbol(parsed, "src.shapes.Shape").kind == "interface"
    assert symbol(parsed, "src.shapes.Square.area").signature == "area(): number"
    r = resolved(TYPESCRIPT)
    assert r[("src.shapes.Square.area", "add")].qualified_name == "src.util.math.add"
    assert r[("src.shapes.Square.area", "side")].how == "self"


GO = {
    "internal/util/math.go": "package util\n\n// Mul multiplies.\nfunc Mul(a int) int { return a }\n",
    "internal/other/x.go": "package other\n\nfunc Run() {}\n",
    "cmd/main.go": (
        "package main\n\nimport (\n\t\"fmt\"\n\tu \"example.com/m/internal/util\"\n)\n\n"
        "type Server struct{}\n\n"
        "func (s *Server) Start() { fmt.Println(u.Mul(2)); s.Stop() }\n"
        "func (s *Server) Stop() {}\n"
        "func Run() {}\n"
        "func main() { Run() }\n"),
}


def test_go_symbols_and_calls() -> None:
    parsed = parse_repo(GO)
    main = parsed["cmd/main.go"]
    assert [(s.qualified_name, s.kind) for s in main.symbols] == [
        ("cmd.Server", "struct"), ("cmd.Server.Start", "method"), ("cmd.Server.Stop", "method"),
        ("cmd.Run", "function"), ("cmd.main", "function")]
    assert symbol(parsed["internal/util/math.go"], "internal.util.Mul").doc == "Mul multiplies."
    r = resolved(GO)
    assert (r[("cmd.Server.Start", "Mul")].qualified_name, r[("cmd.Server.Start", "Mul")].how) == (
        "internal.util.Mul", "import")  # through the module path's last segments
    assert r[("cmd.Server.Start", "Println")].how == "external"
    assert r[("cmd.main", "Run")].qualified_name == "cmd.Run"  # ambiguous in the repository, but in this file
    assert r[("cmd.Server.Start", "Stop")].qualified_name == "cmd.Server.Stop"  # a method call, s.Stop()


RUST = {
    "src/util.rs": "/// Parse a thing.\npub fn parse() {}\npub fn other() {}\n",
    "src/store.rs": "pub fn other() {}\n",
    "src/point.rs": (
        "use crate::util::parse;\n\n"
        "#[derive(Debug)]\n"
        "pub struct Point { x: i32 }\n\n"
        "impl Point {\n"
        "    pub fn new() -> Self { parse(); Self::origin(); other(); Point { x: 0 } }\n"
        "    fn origin() {}\n"
        "}\n"),
}


def test_rust_symbols_and_calls() -> None:
    parsed = parse_repo(RUST)
    point = parsed["src/point.rs"]
    assert [(s.qualified_name, s.kind) for s in point.symbols] == [
        ("src.point.Point", "struct"), ("src.point.Point.new", "method"), ("src.point.Point.origin", "method")]
    assert symbol(parsed["src/util.rs"], "src.util.parse").doc == "Parse a thing."
    r = resolved(RUST)
    assert r[("src.point.Point.new", "parse")].qualified_name == "src.util.parse"
    assert r[("src.point.Point.new", "origin")].qualified_name == "src.point.Point.origin"  # Self::origin()
    assert r[("src.point.Point.new", "other")].candidates == 2


JAVA = {
    "src/com/acme/util/Strings.java": "package com.acme.util;\n\npublic class Strings {\n"
                                      "  public static String trim(String s) { return s; }\n}\n",
    "src/com/acme/App.java": (
        "package com.acme;\n\nimport com.acme.util.Strings;\n\n"
        "/** The app. */\n"
        "public class App {\n"
        "  public App() { init(); }\n"
        "  void init() { Strings.trim(\"x\"); new App(); }\n"
        "}\n"),
}


def test_java_symbols_and_calls() -> None:
    parsed = parse_repo(JAVA)["src/com/acme/App.java"]
    assert [(s.qualified_name, s.kind) for s in parsed.symbols] == [
        ("com.acme.App", "class"), ("com.acme.App.App", "method"), ("com.acme.App.init", "method")]
    assert symbol(parsed, "com.acme.App").doc == "The app."
    r = resolved(JAVA)
    assert (r[("com.acme.App.init", "trim")].qualified_name, r[("com.acme.App.init", "trim")].how) == (
        "com.acme.util.Strings.trim", "import")
    assert r[("com.acme.App.App", "init")].qualified_name == "com.acme.App.init"


@pytest.mark.parametrize("path,source", [
    ("a.py", "def ok():\n    pass\n\ndef broken(:\n    return (\n\nclass After:\n    def m(self): pass\n"),
    ("a.ts", "function ok() {}\nfunction broken( {\nclass After { m() {} }\n"),
    ("a.go", "package a\nfunc ok() {}\nfunc broken( {\n"),
])
def test_unparseable_source_yields_what_it_holds_and_flags_errors(path: str, source: str) -> None:
    parsed = parse_file(path, source, language_of(path) or "")
    assert parsed.errors > 0 and parsed.first_error_line is not None
    assert any(s.name == "ok" for s in parsed.symbols)


def test_line_slice_is_exact() -> None:
    text = "a\r\nb\nc"
    assert line_slice(text, 1, 2) == "a\r\nb\n" and line_slice(text, 3, 3) == "c"


def test_names_split_on_case_and_underscores() -> None:
    assert split_identifiers("getUserName") == "get User Name"
    assert split_identifiers("parse_http_url") == "parse http url"
    assert query_terms("HTTPServer") == query_terms("http server")


def test_a_chain_of_calls_parses_in_linear_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each call's receiver in `a.f().f()...` is the whole chain before it: its qualifier is read from a bounded
    prefix, so the source text read grows linearly with the calls, not quadratically (it was: 40k calls, 73 s).
    Counted in characters read through the parser's text helpers, not timed: a busy machine cannot fail it."""
    from domain.code import grammars, symbols

    read = [0]

    def counting(fn):
        def wrapped(*args, **kwargs):
            out = fn(*args, **kwargs)
            read[0] += len(out)
            return out
        return wrapped

    for module in (grammars, symbols):
        for name in ("text_of", "text_prefix"):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, counting(getattr(module, name)))

    def chars_read(n: int) -> int:
        read[0] = 0
        parsed = parse_file("m.py", "x = a" + ".f()" * n + "\n", "python")
        assert len(parsed.calls) == n and all(len(c.qualifier or "") <= 200 for c in parsed.calls)
        return read[0]

    small, large = chars_read(1_000), chars_read(8_000)
    assert large <= 10 * small, (small, large)  # linear: about 8x (quadratic: about 64x)
    assert large <= 8_000 * 1_100  # at most a bounded prefix per call
