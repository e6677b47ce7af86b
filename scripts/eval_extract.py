"""Precision and recall of rule extraction on the hand-labelled tests/data/extraction_corpus.jsonl.

Each corpus line is `{"text": ..., "expect": [{"kind": ..., "content": ..., "slot": ...}, ...]}`:
what a careful person would store from that message (an empty list: nothing). `content` may be a
list of equally good wordings; `slot` is optional. A line may name a `family` ("rules": how to
answer — language, length, emoji, tone — and the ordinary lines that must not become rules); each
family is also scored on its own. Every text is read by
`nahida.memory.write.statements.statements` (the rules behind extraction) and the statements
found are matched one to one against the expected items of the same line.

Matching rule: a prediction matches an expected item when the kinds are equal and the normalised
contents are equal (or equal to one of the listed wordings). Normalising applies NFKC,
lower-cases, drops everything that is not a letter, digit or Han character (spaces, punctuation,
apostrophes, 《》, emoji) and trailing Chinese particles (了啦啊呀哦呢吧嘛的). A prediction of
another kind is a miss and a false positive. Slots do not decide a match; for the matched items
that name a slot the report counts how many predicted the same slot. Precision is TP / (TP + FP),
recall TP / (TP + FN). A line counts as Chinese when it holds a Han character, English otherwise.

    .venv/bin/python scripts/eval_extract.py              # Markdown tables
    .venv/bin/python scripts/eval_extract.py --verbose    # and every miss and false positive
    .venv/bin/python scripts/eval_extract.py --corpus other.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nahida.memory.write.statements import statements  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "extraction_corpus.jsonl"
_HAN = re.compile(r"[\u3400-\u9fff]")
_NOT_WORD = re.compile(r"[\W_]+")
_PARTICLES = "了啦啊呀哦呢吧嘛的"


@dataclass(frozen=True, slots=True)
class Item:
    kind: str
    contents: tuple[str, ...]  # acceptable wordings, as written
    slot: str | None = None


@dataclass(frozen=True, slots=True)
class Line:
    number: int
    text: str
    expect: tuple[Item, ...]
    family: str | None = None

    @property
    def lang(self) -> str:
        return "zh" if _HAN.search(self.text) else "en"


@dataclass(slots=True)
class Tally:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    slots: int = 0  # matched items whose expected slot is given
    slots_ok: int = 0  # … and predicted the same slot

    def add(self, other: Tally) -> None:
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn
        self.slots += other.slots
        self.slots_ok += other.slots_ok

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclass(slots=True)
class Outcome:
    line: Line
    predicted: list[Item]
    matched: list[tuple[Item, Item]] = field(default_factory=list)  # (expected, predicted)
    missed: list[Item] = field(default_factory=list)
    false: list[Item] = field(default_factory=list)


def normalise(content: str) -> str:
    text = _NOT_WORD.sub("", unicodedata.normalize("NFKC", content).casefold())
    while len(text) > 1 and text[-1] in _PARTICLES and _HAN.match(text[-2]):
        text = text[:-1]
    return text


def load(path: Path = CORPUS) -> list[Line]:
    lines = []
    for number, raw in enumerate(path.read_text("utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        data = json.loads(raw)
        items = []
        for e in data["expect"]:
            contents = e["content"] if isinstance(e["content"], list) else [e["content"]]
            items.append(Item(e["kind"], tuple(contents), e.get("slot")))
        lines.append(Line(number, data["text"], tuple(items), data.get("family")))
    return lines


def rules(text: str) -> list[Item]:
    return [Item(s.kind, (s.content,), s.slot) for s in statements(text)]


def score(line: Line, predicted: Sequence[Item]) -> Outcome:
    """One-to-one matching, in corpus order: each expected item takes the first unmatched
    prediction of the same kind whose content equals one of its wordings (normalised)."""
    outcome = Outcome(line, list(predicted))
    free = list(predicted)
    for expected in line.expect:
        wanted = {normalise(c) for c in expected.contents}
        hit = next(
            (p for p in free if p.kind == expected.kind and normalise(p.contents[0]) in wanted),
            None,
        )
        if hit is None:
            outcome.missed.append(expected)
        else:
            free.remove(hit)
            outcome.matched.append((expected, hit))
    outcome.false = free
    return outcome


def evaluate(
    lines: Iterable[Line], read: Callable[[str], list[Item]] = rules
) -> tuple[list[Outcome], dict[str, Tally], dict[str, Tally]]:
    """Outcomes per line, tallies per group ("all", "zh", "en", then each family) and per kind."""
    outcomes = [score(line, read(line.text)) for line in lines]
    groups: dict[str, Tally] = {"all": Tally(), "zh": Tally(), "en": Tally()}
    kinds: dict[str, Tally] = {}
    for o in outcomes:
        tally = Tally(len(o.matched), len(o.false), len(o.missed))
        for expected, predicted in o.matched:
            if expected.slot is not None:
                tally.slots += 1
                tally.slots_ok += expected.slot == predicted.slot
            kinds.setdefault(expected.kind, Tally()).tp += 1
        for item in o.missed:
            kinds.setdefault(item.kind, Tally()).fn += 1
        for item in o.false:
            kinds.setdefault(item.kind, Tally()).fp += 1
        groups["all"].add(tally)
        groups[o.line.lang].add(tally)
        if o.line.family:
            groups.setdefault(o.line.family, Tally()).add(tally)
    return outcomes, groups, dict(sorted(kinds.items()))


def _groups(line: Line) -> tuple[str, ...]:
    return (line.lang, line.family) if line.family else (line.lang,)


def _row(name: str, t: Tally, extra: Sequence[str] = ()) -> str:
    cells = [name, *extra, str(t.tp), str(t.fp), str(t.fn)]
    cells += [f"{t.precision:.3f}", f"{t.recall:.3f}", f"{t.f1:.3f}"]
    return "| " + " | ".join(cells) + " |"


def report(outcomes: list[Outcome], groups: dict[str, Tally], kinds: dict[str, Tally]) -> str:
    lines = Counter(g for o in outcomes for g in _groups(o.line))
    empty = Counter(g for o in outcomes if not o.line.expect for g in _groups(o.line))
    quiet = Counter(
        g for o in outcomes if not o.line.expect and not o.predicted for g in _groups(o.line)
    )
    lines["all"], empty["all"], quiet["all"] = (
        len(outcomes),
        empty["zh"] + empty["en"],
        quiet["zh"] + quiet["en"],
    )
    out = [
        "| set | lines | expect nothing (quiet) | TP | FP | FN | precision | recall | F1 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, tally in groups.items():
        extra = (str(lines[name]), f"{empty[name]} ({quiet[name]})")
        out.append(_row(name, tally, extra))
    out += [
        "",
        "| kind | TP | FP | FN | precision | recall | F1 |",
        "|---|---|---|---|---|---|---|",
    ]
    out += [_row(kind, tally) for kind, tally in kinds.items()]
    total = groups["all"]
    if total.slots:
        out += ["", f"Slots: {total.slots_ok} of {total.slots} matched items with a slot agree."]
    return "\n".join(out)


def _show(item: Item) -> str:
    slot = f" [{item.slot}]" if item.slot else ""
    return f"{item.kind}: {' | '.join(item.contents)}{slot}"


def details(outcomes: list[Outcome]) -> str:
    out = []
    for o in outcomes:
        wrong_slots = [(e, p) for e, p in o.matched if e.slot is not None and e.slot != p.slot]
        if not (o.missed or o.false or wrong_slots):
            continue
        out.append(f"line {o.line.number}: {o.line.text}")
        out += [f"  missed   {_show(item)}" for item in o.missed]
        out += [f"  false    {_show(item)}" for item in o.false]
        out += [f"  slot     {e.slot} expected, got {p.slot}" for e, p in wrong_slots]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--verbose", "-v", action="store_true", help="list misses and false ones")
    args = parser.parse_args(argv)
    outcomes, groups, kinds = evaluate(load(args.corpus))
    print(report(outcomes, groups, kinds))
    if args.verbose:
        print()
        print(details(outcomes) or "no misses, no false positives")


if __name__ == "__main__":
    main()
