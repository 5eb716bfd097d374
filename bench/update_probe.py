"""The update probe: precision and recall of the governor's update rule (domain/update.py) on labelled pairs.

tests/fixtures/update_probe.tsv holds pairs written for this project (never from a benchmark): `update` when the
new text states a new value for what the old one says, `other` for a different fact, subject or an added detail,
`same` for a repeat; update_probe_heldout.tsv was written after the rule was frozen. Run:
python -m bench.update_probe (prints the figures of each and every wrong decision).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from domain.update import update_of

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
PROBE = FIXTURES / "update_probe.tsv"  # the rule was written against these
HELD_OUT = FIXTURES / "update_probe_heldout.tsv"  # written after the rule was frozen, never tuned on


@dataclass(frozen=True)
class Scores:
    pairs: int
    updates: int
    precision: float
    recall: float
    wrong: tuple[tuple[str, str, str], ...]  # (label, old, new) decided wrongly


def load(path: Path = PROBE) -> list[tuple[str, str, str]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            label, old, new = line.split("\t")
            rows.append((label, old, new))
    return rows


def score(rows: list[tuple[str, str, str]]) -> Scores:
    tp = fp = fn = 0
    wrong = []
    for label, old, new in rows:
        said = update_of(new, old) is not None
        truth = label == "update"
        tp += said and truth
        fp += said and not truth
        fn += truth and not said
        if said != truth:
            wrong.append((label, old, new))
    return Scores(len(rows), tp + fn, tp / max(1, tp + fp), tp / max(1, tp + fn), tuple(wrong))


def main() -> None:
    for name, path in (("probe", PROBE), ("held out", HELD_OUT), ("both", None)):
        s = score(load(PROBE) + load(HELD_OUT) if path is None else load(path))
        print(f"update {name}: {s.pairs} pairs ({s.updates} updates) precision {s.precision:.3f} "
              f"recall {s.recall:.3f}")
        for label, old, new in s.wrong if path is not None else ():
            print(f"  wrong ({label}): {old!r} -> {new!r}")


if __name__ == "__main__":
    main()
