"""Precision and recall of the secret filter on tests/data/secrets_corpus.jsonl and a held-out set.

Each corpus line is `{"text": ..., "secret": ...}`: `secret` is the part of the text that must not
survive redaction (a password said in words, on a command line, in a config line), or null for a
line that holds no secret and must come back unchanged ("我忘了密码怎么办", "password reset link
expired"). The ordinary group chat of tests/data/chat_lines_zh_en.txt is read too, every line a
line without a secret. A line may carry `"known_miss": "why"`: a secret the filter is known not
to catch, kept so that recall counts it.

tests/data/secrets_heldout.jsonl has the same form: lines written after the patterns were settled
and never tuned against, so its figures estimate how the filter does on phrasings nobody
anticipated. (Don't tune the patterns on it; write a new held-out set when you fold it in.)

Scoring, per line: a line with a secret is caught (TP) when `safety.redact` takes the secret out,
missed (FN) when any of it is left; a line without one is a false alarm (FP) when `find_secrets`
finds anything in it. Precision is TP / (TP + FP), recall TP / (TP + FN). A line counts as
Chinese when it holds a Han character, English otherwise.

    .venv/bin/python scripts/eval_secrets.py              # Markdown table
    .venv/bin/python scripts/eval_secrets.py --verbose    # and every miss and false alarm
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nahida.memory.core.safety import find_secrets, redact  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "secrets_corpus.jsonl"
HELDOUT = ROOT / "tests" / "data" / "secrets_heldout.jsonl"
CHAT = ROOT / "tests" / "data" / "chat_lines_zh_en.txt"
_HAN = re.compile(r"[\u3400-\u9fff]")


@dataclass(frozen=True, slots=True)
class Line:
    number: int
    text: str
    secret: str | None
    source: str  # "corpus" or "chat"
    known_miss: str | None = None  # why the filter misses it, for a miss kept on purpose

    @property
    def lang(self) -> str:
        return "zh" if _HAN.search(self.text) else "en"


@dataclass(slots=True)
class Tally:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def load(corpus: Path = CORPUS, chat: Path | None = CHAT) -> list[Line]:
    lines = []
    for number, raw in enumerate(corpus.read_text("utf-8").splitlines(), 1):
        if raw.strip():
            data = json.loads(raw)
            known = data.get("known_miss")
            lines.append(Line(number, data["text"], data["secret"], "corpus", known))
    if chat is not None:
        for number, text in enumerate(chat.read_text("utf-8").splitlines(), 1):
            if text.strip():
                lines.append(Line(number, text, None, "chat"))
    return lines


def outcome(line: Line) -> str:
    """ "tp", "fn", "fp" or "tn" for one line."""
    if line.secret is None:
        return "fp" if find_secrets(line.text) else "tn"
    return "fn" if line.secret in redact(line.text) else "tp"


def evaluate(lines: Iterable[Line]) -> tuple[dict[str, Tally], list[tuple[Line, str]]]:
    """Tallies per group ("all", "zh", "en", "corpus", "chat") and every line that went wrong."""
    groups = {name: Tally() for name in ("all", "zh", "en", "corpus", "chat")}
    wrong = []
    for line in lines:
        got = outcome(line)
        for name in ("all", line.lang, line.source):
            tally = groups[name]
            setattr(tally, got, getattr(tally, got) + 1)
        if got in ("fn", "fp"):
            wrong.append((line, got))
    return groups, wrong


def report(groups: dict[str, Tally]) -> str:
    out = [
        "| set | with a secret | without | caught | missed | false alarms | precision | recall |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, t in groups.items():
        cells = [name, str(t.tp + t.fn), str(t.fp + t.tn), str(t.tp), str(t.fn), str(t.fp)]
        cells += [f"{t.precision:.3f}", f"{t.recall:.3f}"]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def details(wrong: Sequence[tuple[Line, str]]) -> str:
    names = {"fn": "missed", "fp": "false alarm"}
    return "\n".join(
        f"{line.source} line {line.number} {names[got]}: {line.text}"
        + (f" ({line.known_miss})" if line.known_miss else "")
        for line, got in wrong
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, nargs="*", default=[CORPUS, HELDOUT])
    parser.add_argument("--verbose", "-v", action="store_true", help="list misses and false alarms")
    args = parser.parse_args(argv)
    for number, corpus in enumerate(args.corpus):
        groups, wrong = evaluate(load(corpus))
        name = corpus.relative_to(ROOT) if corpus.is_relative_to(ROOT) else corpus
        print(("\n" if number else "") + f"{name}, with ordinary chat:\n")
        print(report(groups))
        if args.verbose:
            print()
            print(details(wrong) or "no misses, no false alarms")


if __name__ == "__main__":
    main()
