"""The update probe: precision and recall of the governor's update rule (domain/update.py) on labelled pairs.

tests/fixtures/update_probe.tsv holds pairs written for this project (never from a benchmark): `update` when the
new text states a new value for what the old one says, `other` for a different fact, subject or an added detail,
`same` for a repeat; update_probe_heldout.tsv was written after the rule was frozen. The word values (session 25:
a colour, a seat, a mode) have three more: update_probe_words.tsv, written with the rule's extension;
update_probe_words_heldout_a.tsv, written blind to the rule by a helper before it was frozen, and measured on once
before the rule's "now" cue was dropped (so no longer unseen); update_probe_words_heldout_b.tsv, written blind
after it was frozen. Change statements ("We raised the API timeout to 60 seconds" after "The API timeout is 30
seconds"): update_probe_changes.tsv, written with the rule, and update_probe_changes_heldout.tsv, written blind by a
helper after it was frozen. The speaker as a subject ("I live in Lisbon" / "I moved to Berlin"):
update_probe_person.tsv, written with the rule, and update_probe_person_heldout.tsv, written blind after it was
frozen (a miss of it, "Maria moved to Seville in June", led to the next rule, so it is no longer unseen). Changes
dated ("… in June", "… last March"): update_probe_when.tsv, written with the rule, and update_probe_when_heldout.tsv,
written blind after it was frozen. Session 26 widened the change statements (domain/update_reported.py) on the misses
of the held-out sets above (which are seen since), then froze the rule: update_probe_life_heldout.tsv (personal
life) and update_probe_work_heldout.tsv (work and software) were written blind by helpers, told only what an update
is, with many indirect ones ("Carla retired, so Ben at Cut Above does my hair now"). Then "now" became a cue for
where or how something is done, and the rule was frozen again: update_probe_everyday_heldout.tsv and
update_probe_workplace_heldout.tsv were written blind after that, asked for many deceptive additions. Then a new
holder of a role of one became an update (domain/update_holder.py), frozen again: update_probe_roles_heldout.tsv
(people and roles) and update_probe_mixed_heldout.tsv (every kind of fact) were written blind after that. Then an
old value named as the one left became an update (domain/update_named.py), frozen again:
update_probe_general_heldout.tsv and update_probe_engineering_heldout.tsv were written blind after that. Run:

    python -m bench.update_probe             # the rule alone: the figures of each file, every wrong decision
    python -m bench.update_probe --governor  # the whole governor on the real write path, per pair in a fresh
                                             # scope: old written, then new; what became of the new write
    python -m bench.update_probe --governor --only "life held out" "work held out"   # some files only

The governor's outcome per label: `superseded` (the newer wins), `merged` (reinforced into the older: the older's
content now holds both), `active` / `staging` / `discard` (admitted beside the older: discard loses it from recall).
"""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from domain.update import update_of

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
PROBE = FIXTURES / "update_probe.tsv"  # the rule was written against these
HELD_OUT = FIXTURES / "update_probe_heldout.tsv"  # written after the rule was frozen, never tuned on
WORDS = FIXTURES / "update_probe_words.tsv"  # word values, written with the rule's extension
WORDS_HELD_OUT_A = FIXTURES / "update_probe_words_heldout_a.tsv"  # blind; measured on once, then the rule changed
WORDS_HELD_OUT_B = FIXTURES / "update_probe_words_heldout_b.tsv"  # blind, written after the rule was frozen
CHANGES = FIXTURES / "update_probe_changes.tsv"  # change statements, written with the rule
CHANGES_HELD_OUT = FIXTURES / "update_probe_changes_heldout.tsv"  # blind, written after the rule was frozen
PERSON = FIXTURES / "update_probe_person.tsv"  # first person and moves, written with the rule
PERSON_HELD_OUT = FIXTURES / "update_probe_person_heldout.tsv"  # blind; one miss of it led to WHEN's rule
WHEN = FIXTURES / "update_probe_when.tsv"  # changes dated ("moved to Seville in June"), written with the rule
WHEN_HELD_OUT = FIXTURES / "update_probe_when_heldout.tsv"  # blind, written after the rule was frozen
LIFE_HELD_OUT = FIXTURES / "update_probe_life_heldout.tsv"  # blind, session 26: personal life
WORK_HELD_OUT = FIXTURES / "update_probe_work_heldout.tsv"  # blind, session 26: work and software
EVERYDAY_HELD_OUT = FIXTURES / "update_probe_everyday_heldout.tsv"  # blind, session 26, after the "now" cue
WORKPLACE_HELD_OUT = FIXTURES / "update_probe_workplace_heldout.tsv"  # blind, session 26, after the "now" cue
ROLES_HELD_OUT = FIXTURES / "update_probe_roles_heldout.tsv"  # blind, session 26, after a role's new holder
MIXED_HELD_OUT = FIXTURES / "update_probe_mixed_heldout.tsv"  # blind, session 26, after a role's new holder
GENERAL_HELD_OUT = FIXTURES / "update_probe_general_heldout.tsv"  # blind, session 26, after the old value named
ENGINEERING_HELD_OUT = FIXTURES / "update_probe_engineering_heldout.tsv"  # blind, session 26, after the old value named
FILES = {"probe": PROBE, "held out": HELD_OUT, "words": WORDS, "words held out a": WORDS_HELD_OUT_A,
         "words held out b": WORDS_HELD_OUT_B, "changes": CHANGES, "changes held out": CHANGES_HELD_OUT,
         "person": PERSON, "person held out": PERSON_HELD_OUT, "when": WHEN, "when held out": WHEN_HELD_OUT,
         "life held out": LIFE_HELD_OUT, "work held out": WORK_HELD_OUT, "everyday held out": EVERYDAY_HELD_OUT,
         "workplace held out": WORKPLACE_HELD_OUT, "roles held out": ROLES_HELD_OUT,
         "mixed held out": MIXED_HELD_OUT, "general held out": GENERAL_HELD_OUT,
         "engineering held out": ENGINEERING_HELD_OUT}


@dataclass(frozen=True)
class Scores:
    pairs: int
    updates: int
    precision: float
    recall: float
    wrong: tuple[tuple[str, str, str], ...]  # (label, old, new) decided wrongly
    # of the pairs said to be updates, the share labelled `other`: a fact that still holds, hidden (a `same` pair
    # said to be one costs nothing: the newer says it too)
    hiding: float


def load(path: Path = PROBE) -> list[tuple[str, str, str]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            label, old, new = line.split("\t")
            rows.append((label, old, new))
    return rows


def score(rows: list[tuple[str, str, str]]) -> Scores:
    tp = fp = fn = hid = 0
    wrong = []
    for label, old, new in rows:
        said = update_of(new, old) is not None
        truth = label == "update"
        tp += said and truth
        fp += said and not truth
        fn += truth and not said
        hid += said and label == "other"
        if said != truth:
            wrong.append((label, old, new))
    return Scores(len(rows), tp + fn, tp / max(1, tp + fp), tp / max(1, tp + fn), tuple(wrong), hid / max(1, tp + fp))


def governed(files: dict[str, Path]) -> dict[str, dict[str, Counter[str]]]:
    """Each pair of each file through the governor on the real write path (services.remember; a fresh scope per
    pair): what became of the new write, counted per file and label."""
    from bench.common import start_stack

    out: dict[str, dict[str, Counter[str]]] = {}
    with start_stack():
        from infra.db import get_engine
        from infra.embedding import get_embedder
        from infra.settings import get_settings
        from services.remember import MemoryInput, remember

        engine = get_engine()
        get_embedder(get_settings().embedding.embedding_model).warm()
        for name, path in files.items():
            outcomes = out.setdefault(name, {})
            for i, (label, old, new) in enumerate(load(path)):
                scope = f"{path.stem}-{i}"
                [before] = remember(engine, "update-probe", [MemoryInput(old, agent_id=scope)], {"actor": "bench"})
                [after] = remember(engine, "update-probe", [MemoryInput(new, agent_id=scope)], {"actor": "bench"})
                outcome = ("superseded" if after.supersedes == before.memory_id else
                           "merged" if after.reinforced == before.memory_id else str(after.disposition))
                outcomes.setdefault(label, Counter())[outcome] += 1
            print(name, {label: dict(c.most_common()) for label, c in outcomes.items()}, flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--governor", action="store_true", help="the whole governor on the real write path")
    parser.add_argument("--output", type=Path, help="the --governor result (default bench/results/)")
    parser.add_argument("--only", nargs="+", choices=sorted(FILES), metavar="FILE",
                        help=f"these files only (of: {', '.join(FILES)})")
    args = parser.parse_args()
    chosen = {name: FILES[name] for name in args.only} if args.only else FILES
    if args.governor:
        from bench.common import machine, save_result

        files = {name: {label: dict(c) for label, c in by_label.items()} for name, by_label in governed(chosen).items()}
        result: dict[str, Any] = {"bench": "update_probe_governor", "machine": machine(), "files": files}
        print("saved", save_result("update-probe-governor", result, args.output))
        return
    for name, path in chosen.items():
        s = score(load(path))
        print(f"update {name}: {s.pairs} pairs ({s.updates} updates) precision {s.precision:.3f} "
              f"recall {s.recall:.3f}; supersedes hiding a fact that holds {s.hiding:.3f}")
        for label, old, new in s.wrong:
            print(f"  wrong ({label}): {old!r} -> {new!r}")


if __name__ == "__main__":
    main()
