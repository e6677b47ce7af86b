"""Literals a regular expression's every match holds: a few substring tests that rule a pattern
out before it runs (`Prefilter`: the statement rules of extraction, the time expressions).

`required(pattern, flags)` reads the pattern's parse tree: a run of literal characters must be
in every match, so must one of a group's alternatives, a repeat taken at least once, or a
lookahead's literals (they lie in the searched text too); what is optional, negated or a
character class gives nothing. Of a sequence's candidates the longest is kept. Texts and
literals are compared `folded`, so case-insensitive patterns keep every match.

The parse tree is `re._parser`'s, CPython's own (private, stable from 3.11 to 3.13); a pattern
it cannot read gets no literals, so it is always run.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Iterator
from typing import Any

sre: Any
sre_parse: Any
try:
    sre = importlib.import_module("re._constants")
    sre_parse = importlib.import_module("re._parser")
except ImportError:  # pragma: no cover - a Python without them: every pattern is run
    sre = sre_parse = None

Needles = frozenset[str]


def folded(text: str) -> str:
    """`text` as literals are looked for in it: every letter an IGNORECASE pattern matches to an
    ASCII one becomes that ASCII letter (casefold does so but for the dotted and dotless i,
    which Python's `re` also matches to "i"), so no match loses its literals."""
    return text.replace("İ", "i").replace("ı", "i").casefold()


def _literal(code: int) -> str | None:
    """The folded form of a literal character, when folding cannot change what matches it:
    ASCII, or a character without case (Han, digits, punctuation)."""
    char = chr(code)
    if char.isascii():
        return char.lower()
    if char.lower() == char == char.upper() and char.casefold() == char:
        return char
    return None


def _better(a: Needles | None, b: Needles | None) -> Needles | None:
    """The more selective of two requirements: longer shortest literal, then fewer literals."""
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b, key=lambda n: (min(map(len, n)), -len(n)))


def _of_sequence(items: Any) -> Needles | None:
    best: Needles | None = None
    run = ""
    for op, arg in items:
        char = _literal(arg) if op is sre.LITERAL else None
        if char is not None:
            run += char
            continue
        if run:
            best, run = _better(best, frozenset([run])), ""
        best = _better(best, _of_item(op, arg))
    return _better(best, frozenset([run])) if run else best


def _of_item(op: Any, arg: Any) -> Needles | None:
    if op is sre.SUBPATTERN:
        return _of_sequence(arg[-1])
    if op is sre.ATOMIC_GROUP:
        return _of_sequence(arg)
    if op is sre.ASSERT:  # lookahead or lookbehind: inside the searched text either way
        return _of_sequence(arg[1])
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
        low, _high, body = arg
        return _of_sequence(body) if low >= 1 else None
    if op is sre.BRANCH:
        found: set[str] = set()
        for alternative in arg[1]:
            needles = _of_sequence(alternative)
            if needles is None:
                return None  # an alternative without literals: nothing is certain
            found |= needles
        return frozenset(found)
    if op is sre.IN and len(arg) <= 8 and all(o is sre.LITERAL for o, _ in arg):
        chars = [_literal(code) for _, code in arg]
        return None if None in chars else frozenset(c for c in chars if c)
    return None  # a class, any character, a back reference, a negative assertion, an anchor


def required(pattern: str, flags: int = 0) -> Needles | None:
    """Folded literals of which every match of `pattern` holds at least one; None when the
    pattern promises none (it must always be run)."""
    if sre_parse is None:
        return None
    try:
        return _of_sequence(sre_parse.parse(pattern, flags).data)
    except (re.error, RecursionError, AttributeError, TypeError):  # or a tree of another shape
        return None


class Prefilter:
    """Which of a list of patterns may match somewhere in a text, as a bit mask (bit i: the
    i-th pattern): those with one of their `required` literals in it, and those without any."""

    def __init__(self, patterns: Iterable[tuple[str, int]]) -> None:
        self.always = 0  # the patterns that promise no literal: always run
        by_needle: dict[str, int] = {}
        for bit, (pattern, flags) in enumerate(patterns):
            needles = required(pattern, flags)
            if needles is None:
                self.always |= 1 << bit
                continue
            for needle in needles:
                by_needle[needle] = by_needle.get(needle, 0) | 1 << bit
        self.needles = frozenset(by_needle)
        self._by_first: dict[str, list[tuple[str, int]]] = {}  # by a literal's first character
        for needle, bits in by_needle.items():
            self._by_first.setdefault(needle[0], []).append((needle, bits))

    def possible(self, text: str) -> int:
        text = folded(text)
        bits = self.always
        for char in self._by_first.keys() & set(text):
            for needle, needed_by in self._by_first[char]:
                if needle in text:
                    bits |= needed_by
        return bits


def ones(bits: int) -> Iterator[int]:
    """The set bits of a mask, lowest first: the patterns `Prefilter.possible` left in, in order."""
    while bits:
        lowest = bits & -bits
        bits ^= lowest
        yield lowest.bit_length() - 1
