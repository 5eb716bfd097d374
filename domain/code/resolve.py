"""Resolving a call to the symbol it calls, from the repository's symbols of that name (pure).

In order, the first that decides:
1. through the file's imports (`from pkg.util import parse; parse()` → pkg.util.parse): the symbol whose
   qualified name ends with the import's target, tried from the full target down to its last two segments
   (a repository's folder prefix or a Go module path need not match); no such symbol: an outside call;
2. `self.` / `this.` / `cls.` / `Self::` in a method: a method of the caller's own class;
3. a qualified call (`Klass.build()`, `P::new()`): the symbol whose qualified name ends with `Klass.build`;
4. a bare name defined in the caller's own file;
5. the only symbol of that name in the repository.
Else unresolved, with the number of candidates (symbols of that name, by distinct qualified name).
"""

from __future__ import annotations

from dataclasses import dataclass

SELF_WORDS = frozenset({"self", "this", "cls", "Self"})
_NOT_A_PATH = frozenset({"crate", "self", "super"})


@dataclass(frozen=True)
class SymbolRef:
    qualified_name: str
    name: str
    file: str
    parent: str | None


@dataclass(frozen=True)
class CallSite:
    file: str
    caller_class: str | None
    callee: str
    qualifier: str | None
    import_target: str | None


@dataclass(frozen=True)
class Resolution:
    qualified_name: str | None
    file: str | None
    candidates: int  # symbols of the target name in the repository (distinct qualified names)
    how: str  # import | self | qualified | file | unique | external | ambiguous | unknown


def target_name(call: CallSite) -> str:
    """The name of the symbol a call looks for (an import alias names its target's last segment)."""
    return call.import_target.rsplit(".", 1)[-1] if call.import_target else call.callee


def _ends_with(qualified_name: str, suffix: str) -> bool:
    return qualified_name == suffix or qualified_name.endswith("." + suffix)


def _one(found: list[SymbolRef], how: str, candidates: int) -> Resolution | None:
    names = sorted({s.qualified_name for s in found})
    if len(names) != 1:
        return None
    first = min((s for s in found if s.qualified_name == names[0]), key=lambda s: s.file)
    return Resolution(first.qualified_name, first.file, candidates, how)


def resolve(call: CallSite, symbols: list[SymbolRef]) -> Resolution:
    """`symbols`: the repository's symbols named target_name(call) (others are ignored)."""
    name = target_name(call)
    named = [s for s in symbols if s.name == name]
    n = len({s.qualified_name for s in named})
    if call.import_target:
        segments = [p for p in call.import_target.split(".") if p]
        for i in range(max(1, len(segments) - 1)):
            matched = [s for s in named if _ends_with(s.qualified_name, ".".join(segments[i:]))]
            if matched:
                return _one(matched, "import", n) or Resolution(None, None, n, "ambiguous")
        return Resolution(None, None, n, "external")
    if call.qualifier in SELF_WORDS and call.caller_class:
        if found := _one([s for s in named if s.parent == call.caller_class], "self", n):
            return found
    elif call.qualifier:
        path = [p for p in call.qualifier.split(".") if p and p not in _NOT_A_PATH]
        is_path = bool(path) and all(p.replace("$", "_").isidentifier() for p in path)
        if is_path and (found := _one([s for s in named if _ends_with(s.qualified_name, ".".join([*path, name]))],
                                      "qualified", n)):
            return found
    else:
        if found := _one([s for s in named if s.file == call.file], "file", n):
            return found
    if found := _one(named, "unique", n):
        return found
    return Resolution(None, None, n, "ambiguous" if n > 1 else "unknown")


__all__ = ["SELF_WORDS", "CallSite", "Resolution", "SymbolRef", "resolve", "target_name"]
