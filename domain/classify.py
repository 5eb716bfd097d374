"""The seven memory types and the routing question. Pure, rule-based, documented.

Type. A producer that writes one of principle · correction · decision · guideline · pitfall · process · model as
its `kind` has typed the memory itself. Any other kind (observation, fact, message) is classified by the
first rule whose phrases appear in the text (case-insensitive, whole words):

| order | type       | phrases                                                                                 |
| ----- | ---------- | --------------------------------------------------------------------------------------- |
| 1     | correction | actually, correction, was/were/is wrong, wrong about, incorrect, mistaken, turns/turned  |
|       |            | out, no longer, not anymore, should have been, "correction:" / "update:" prefix          |
| 2     | pitfall    | avoid, don't, do not, never, beware, careful, caution, gotcha, pitfall, trap, break(s),  |
|       |            | broke, fail(s/ed), crash(es/ed), bug, watch out, caveat, footgun, deadlock, leak(s)      |
| 3     | decision   | decided, decide(s), decision, chose, chosen, choose, opted, settled on, agreed, going    |
|       |            | with, we will, we'll, selected, picked                                                  |
| 4     | process    | step(s), steps to, first … then, procedure, workflow, how to, checklist, recipe, run `…` |
|       |            | or a numbered list                                                                      |
| 5     | guideline  | should, prefer(s), always, must, make sure, ensure, recommended, best practice,         |
|       |            | convention                                                                              |
| 6     | principle  | principle, in general, generally, rule of thumb, the key is, fundamental(ly),           |
|       |            | philosophy, more important than, matters more                                           |
| 7     | model      | everything else: a description of how something is or works                             |

Route. The reference's question, "would this still hold in another project?", answered by the first rule:

| order | route     | rule                                                                                   |
| ----- | --------- | -------------------------------------------------------------------------------------- |
| 1     | project   | the text names something of one project: "this/our project, repo, codebase, service", |
|       |           | a source file path (name.py, src/…), or the write's own project name                  |
| 2     | project   | a decision written with a project: judgment about that project                        |
| 3     | knowledge | a reference fact: kind "fact", or a model with no first or second person in it          |
| 4     | agent     | everything else holds across projects: lessons, habits, what the user said or did     |
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from domain.events import MEMORY_TYPES
from domain.text import word_pattern

Route = Literal["agent", "knowledge", "project"]


TYPE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("correction", re.compile(
        r"(?<![\w'])(actually|correction|(?:was|were|is) wrong|wrong about|incorrect|mistaken|turn(?:s|ed) out|"
        r"no longer|not anymore|should have been)(?![\w'])|^\s*(?:correction|update)\s*:", re.IGNORECASE)),
    ("pitfall", word_pattern("avoid", "don't", "do not", "never", "beware", "careful", "caution", "gotcha", "pitfall",
                       "trap", "breaks?", "broke", "fail(?:s|ed)?", "crash(?:es|ed)?", "bug", "watch out",
                       "caveat", "footgun", "deadlock", "leaks?")),
    ("decision", word_pattern("decided", "decides?", "decision", "chose", "chosen", "choose", "opted", "settled on",
                        "agreed", "going with", "we will", "we'll", "selected", "picked")),
    ("process", re.compile(
        r"(?<![\w'])(steps?|procedure|workflow|how to|checklist|recipe)(?![\w'])|\bfirst\b.*\bthen\b|run `|"
        r"(^|\n)\s*\d+[.)]\s", re.IGNORECASE | re.DOTALL)),
    ("guideline", word_pattern("should", "prefers?", "always", "must", "make sure", "ensure", "recommended",
                         "best practice", "convention")),
    ("principle", word_pattern("principle", "in general", "generally", "rule of thumb", "the key is",
                         "fundamental(?:ly)?", "philosophy", "more important than", "matters more")),
)

_PROJECT_MARKERS = re.compile(
    r"(?<![\w'])((?:this|our) (?:project|repo|repository|codebase|service)|in this repo)(?![\w'])|"
    r"(?<![\w/.-])[\w.-]+(?:/[\w.-]+)*\.(?:py|pyi|ts|tsx|js|jsx|go|rs|java|kt|rb|php|c|h|cpp|cs|sql|ya?ml|toml|ini|"
    r"cfg|sh)\b|"
    r"(?<![\w])(?:src|lib|app|tests?|cmd|pkg)/[\w./-]+", re.IGNORECASE)
_PERSONAL = word_pattern("i", "i'm", "i've", "i'll", "i'd", "me", "my", "mine", "we", "we're", "we've", "us", "our",
                   "ours", "you", "you're", "your", "yours")


@dataclass(frozen=True)
class Classification:
    memory_type: str
    source: Literal["producer", "rule"]
    rule: str


@dataclass(frozen=True)
class Routing:
    route: Route
    rule: str


def classify(content: str, kind: str) -> Classification:
    """The memory's type: the producer's kind when it is one of the seven, else the first matching rule."""
    if kind in MEMORY_TYPES:
        return Classification(kind, "producer", f"kind:{kind}")
    for memory_type, pattern in TYPE_RULES:
        match = pattern.search(content)
        if match:
            return Classification(memory_type, "rule", f"{memory_type}:{match.group(0).strip().lower()[:40]}")
    return Classification("model", "rule", "model:default")


def route(content: str, memory_type: str, kind: str, project: str | None) -> Routing:
    """Where the memory belongs: agent (cross-project), knowledge (reference fact) or project (judgment)."""
    marker = _PROJECT_MARKERS.search(content)
    if marker:
        return Routing("project", f"project:{marker.group(0).strip().lower()[:40]}")
    if project and re.search(r"(?<![\w])" + re.escape(project) + r"(?![\w])", content, re.IGNORECASE):
        return Routing("project", "project:names its project")
    if memory_type == "decision" and project:
        return Routing("project", "project:decision within a project")
    if kind == "fact":
        return Routing("knowledge", "knowledge:kind fact")
    if memory_type == "model" and not _PERSONAL.search(content):
        return Routing("knowledge", "knowledge:impersonal model")
    return Routing("agent", "agent:holds across projects")
