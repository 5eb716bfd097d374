"""Sectioning a document at its `##` headings (domain/knowledge/sections.py) and document paths (paths.py)."""

from __future__ import annotations

import hashlib

import pytest

from domain.knowledge.paths import document_size_problem, path_problem
from domain.knowledge.sections import PREAMBLE, UNTITLED, split_sections


def paths(doc: str) -> list[str]:
    return [s.heading_path for s in split_sections(doc)]


def lossless(doc: str) -> None:
    sections = split_sections(doc)
    assert "".join(s.text for s in sections) == doc
    assert [s.ordinal for s in sections] == list(range(len(sections)))
    for s in sections:
        assert s.content_hash == hashlib.sha256(s.text.encode()).hexdigest()


def test_headings_and_preamble_with_title() -> None:
    doc = "# Deploys\nintro text\n\n## Rollback\nrun it back\n### Details\nmore\n## Canary\nslow\n"
    sections = split_sections(doc)
    assert [s.heading_path for s in sections] == [PREAMBLE, "Deploys > Rollback", "Deploys > Canary"]
    assert sections[0].text == "# Deploys\nintro text\n\n"
    assert sections[1].text == "## Rollback\nrun it back\n### Details\nmore\n"  # ### stays inside
    lossless(doc)


def test_no_preamble_when_the_document_starts_with_a_section() -> None:
    assert paths("## A\na\n## B\nb") == ["A", "B"]


def test_plain_text_is_one_preamble_section() -> None:
    doc = "just some notes\nwithout any heading\n"
    assert paths(doc) == [PREAMBLE]
    lossless(doc)
    assert split_sections("") == []


def test_code_fences_hide_headings() -> None:
    doc = ("## Real\n```sh\n## not a heading\n# nor this\n```\n"
           "~~~~\n## inside tildes\n~~~\n## still inside\n~~~~\n## Next\n")
    assert paths(doc) == ["Real", "Next"]
    lossless(doc)


def test_unclosed_fence_runs_to_the_end() -> None:
    assert paths("## A\n```\n## B\n") == ["A"]


def test_crlf_kept_verbatim() -> None:
    doc = "pre\r\n## One\r\nline\r\n## Two  ##\r\nlast"
    sections = split_sections(doc)
    assert [s.heading_path for s in sections] == [PREAMBLE, "One", "Two"]
    assert sections[1].text == "## One\r\nline\r\n"
    assert sections[2].text == "## Two  ##\r\nlast"
    lossless(doc)


def test_empty_sections_and_untitled_heading() -> None:
    doc = "## A\n## B\n##\n## \n"
    sections = split_sections(doc)
    assert [s.heading_path for s in sections] == ["A", "B", UNTITLED, f"{UNTITLED} (2)"]
    assert sections[0].text == "## A\n"
    lossless(doc)


def test_unicode_headings() -> None:
    doc = "# Überblick\n## Déploiement 🚀\nx\n## 部署\ny\n"
    assert paths(doc) == [PREAMBLE, "Überblick > Déploiement 🚀", "Überblick > 部署"]
    lossless(doc)


def test_duplicate_headings_disambiguated_in_order() -> None:
    doc = "## Setup\na\n## Setup\nb\n## Setup (2)\nc\n## Setup\nd\n"
    assert paths(doc) == ["Setup", "Setup (2)", "Setup (2) (2)", "Setup (3)"]
    assert split_sections(doc) == split_sections(doc)  # deterministic


def test_what_is_not_a_heading() -> None:
    doc = "##nospace\n    ## indented code\n> ## quoted\n#### deep\n"
    assert paths(doc) == [PREAMBLE]
    assert paths("   ## three spaces\n") == ["three spaces"]


def test_lone_cr_is_not_a_line_break() -> None:
    doc = "a\r## not a heading\n## Yes\n"
    assert paths(doc) == [PREAMBLE, "Yes"]
    lossless(doc)


def test_a_later_title_changes_the_paths_after_it() -> None:
    assert paths("## A\n# Two\n## B\n") == ["A", "Two > B"]


@pytest.mark.parametrize("doc", ["x", "\n\n", "## a\r\n\r\n", "```\n## x", "🎉\n## 🎉\n## 🎉\n", "\r\n## a\n\r"])
def test_lossless_on_odd_documents(doc: str) -> None:
    lossless(doc)


@pytest.mark.parametrize("path", ["guide.md", "ops/deploys/rollback.md", "a b/ü.md", "x..y/.hidden"])
def test_valid_paths(path: str) -> None:
    assert path_problem(path) is None


@pytest.mark.parametrize(("path", "why"), [
    ("", "empty"), ("/etc/passwd", "relative"), ("../secret", "'..'"), ("a/../../b", "'..'"), ("a/./b", "'.'"),
    ("a\\b", "backslash"), ("a\x00b", "NUL"), ("a\nb", "control"), ("a//b", "empty segment"), ("a/", "empty segment"),
    ("x" * 513, "at most 512"), ("a\ud800", "Unicode"),
])
def test_invalid_paths_say_why(path: str, why: str) -> None:
    problem = path_problem(path)
    assert problem is not None and why in problem


def test_document_size() -> None:
    assert document_size_problem("é" * 10, 20) is None
    assert "21 bytes" in (document_size_problem("é" * 10 + "x", 20) or "")
