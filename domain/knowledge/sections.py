"""A document split into sections at its `##` headings, deterministically and losslessly.

- A line `## Heading` (up to 3 spaces of indent, ATX style, optional closing #s) starts a section. `#` titles and
  `###`+ headings stay inside the section they fall in; setext (underlined) headings are not headings here.
- A section's heading path is "<the # title above it> > <its ## heading>", or just its ## heading when no `#`
  heading comes before it: `Deploys > Rollback`.
- Text before the first `##` heading is its own section, heading path PREAMBLE (""); a document that starts with
  a `##` heading has none.
- Lines inside fenced code blocks (``` or ~~~) are never headings.
- Lines end at "\\n" only ("\\r\\n" keeps its "\\r" in the slice; a lone "\\r" is not a line break), so each
  section's `text` is the exact slice of the document and the slices, in order, concatenate to it.
- Heading paths are unique within a document: a repeated one gets " (2)", " (3)", ... in document order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from domain.text import content_hash

PREAMBLE = ""
UNTITLED = "(untitled)"
PATH_SEPARATOR = " > "

_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


@dataclass(frozen=True)
class Section:
    heading_path: str
    ordinal: int  # 0-based position in the document
    text: str  # the exact slice of the document
    content_hash: str  # sha256 of text (UTF-8)


def _heading(line: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading line (its line ending stripped), else None."""
    m = _ATX.match(line.rstrip("\r\n").rstrip("\r"))
    if not m:
        return None
    title = (m.group(2) or "").strip()
    if title and set(title) == {"#"}:  # "## ##": only a closing sequence
        title = ""
    return len(m.group(1)), title


class _Fences:
    """Whether a line is inside a fenced code block (CommonMark: closed by the same character, at least as long,
    with nothing after it)."""

    def __init__(self) -> None:
        self.open: str | None = None

    def inside(self, line: str) -> bool:
        m = _FENCE.match(line.rstrip("\r\n").rstrip("\r"))
        if self.open is None:
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                self.open = m.group(1)
                return True
            return False
        if m and m.group(1)[0] == self.open[0] and len(m.group(1)) >= len(self.open) and not m.group(2).strip():
            self.open = None
        return True


def _unique(path: str, seen: set[str]) -> str:
    if path not in seen:
        return path
    n = 2
    while f"{path} ({n})" in seen:
        n += 1
    return f"{path} ({n})"


def split_sections(document: str) -> list[Section]:
    """The document's sections in order; "".join(s.text for s in sections) == document."""
    slices: list[tuple[str, list[str]]] = []  # (raw heading path, lines)
    title: str | None = None
    fences = _Fences()
    current: tuple[str, list[str]] | None = None
    for line in _LINE.findall(document):
        heading = None if fences.inside(line) else _heading(line)
        if heading is not None and heading[0] == 2:
            name = heading[1] or UNTITLED
            current = (f"{title}{PATH_SEPARATOR}{name}" if title else name, [line])
            slices.append(current)
            continue
        if heading is not None and heading[0] == 1:
            title = heading[1] or None
        if current is None:
            current = (PREAMBLE, [line])
            slices.append(current)
        else:
            current[1].append(line)
    seen: set[str] = set()
    out = []
    for ordinal, (raw, lines) in enumerate(slices):
        path = _unique(raw, seen)
        seen.add(path)
        text = "".join(lines)
        out.append(Section(path, ordinal, text, content_hash(text)))
    return out


def has_body(text: str) -> bool:
    """Whether a section holds any text beyond its headings (a `# Deploys` title alone answers nothing)."""
    fences = _Fences()
    # Lines one at a time: the first line of body ends the look, so a long section costs only its opening lines.
    return any(line.strip() and (fences.inside(line) or _heading(line) is None)
               for line in (m.group() for m in _LINE.finditer(text)))


__all__ = ["PATH_SEPARATOR", "PREAMBLE", "UNTITLED", "Section", "has_body", "split_sections"]
