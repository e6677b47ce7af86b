"""Literals every match holds (`needles.required`), and the statement rules left out for want
of them: what extraction reads is the same as when every rule is run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nahida.memory.write import statements
from nahida.memory.write.needles import Needles, folded, required

ROOT = Path(__file__).resolve().parents[2]


def present(text: str, needles: Needles | None) -> bool:
    return needles is None or any(needle in text for needle in needles)


# required() ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "flags", "expected"),
    [
        ("abc", 0, {"abc"}),
        ("a.c", 0, {"a"}),  # a run each side of the dot, the first kept on a tie
        ("x+abcd?", 0, {"abc"}),  # the repeat's body counts, the optional d does not
        ("(?:记住|记下)(?P<v>.+)", 0, {"记"}),  # re's parser takes the common prefix out
        ("(?:remember|keep in mind)", re.I, {"remember", "keep in mind"}),
        ("REMEMBER", re.I, {"remember"}),
        ("(?=.*(?:以后|今后))我", 0, {"以后", "今后"}),  # a lookahead's literals are in the text
        ("(?!以后)我", 0, {"我"}),  # a negative lookahead's are not
        ("[，,]", 0, {"，", ","}),
        ("(?:ab)?c*", 0, None),  # nothing is certain
        ("(?:ab|)c", 0, {"c"}),  # an empty alternative
        (r"\d+年", 0, {"年"}),
        ("ÉCOLE", re.I, {"cole"}),  # a cased non-ASCII letter breaks a run
        ("(", 0, None),  # not a pattern
    ],
)
def test_the_literals_a_pattern_promises(
    pattern: str, flags: int, expected: set[str] | None
) -> None:
    found = required(pattern, flags)
    assert (None if found is None else set(found)) == expected


_TRICKY = [
    r"(?:please\s+)?(?:remember|keep in mind)(?:\s+that)?\s*[:,]?\s+(?P<v>.+)",
    r"(?=.*(?:以后|今后|我都))(?:你|请)*(?:用|说)(?P<v>英文|中文|english)",
    r"i(?:'m| am)\s+(?:a|an)\s+(?P<v>nurse|kiss)",
    r"(?:(?-i:[A-Z])[a-z]+)\s+is\s+(?:my|our)\s+cat",
    r"(?:ab|cd)+(?:ef)?gh(?!ij)",
    r"s[ks]y(?<=ksy)",
]
_ALPHABET = [*"abcdefghijkSKYIı İſKmnpqrstuvwxyz'", "以后", "我都", "用", "英文", "请"]
_WORDS = ["remember", "keep in mind", "that", "please", "i'm", "i am", "a", "an", "nurse"]
_WORDS += ["KISS", "Cat", "is", "my", "our", "ab", "cd", "ef", "gh", "ij", "sky", "ſky", "ksy"]


@settings(max_examples=500, deadline=None)
@given(
    st.sampled_from(_TRICKY),
    st.lists(st.sampled_from(_ALPHABET + _WORDS), max_size=12),
    st.sampled_from(["", " "]),
)
def test_every_match_holds_one_of_the_literals(pattern: str, parts: list[str], glue: str) -> None:
    text = glue.join(parts)
    needles = required(pattern, re.I)
    for match in re.finditer(pattern, text, re.I):
        assert present(folded(match.string), needles), (pattern, text)
        assert present(folded(match.group(0)), needles) or "(?=" in pattern or "(?<=" in pattern


def test_the_literals_are_found_however_the_text_is_cased() -> None:
    needles = required("(?:remember|skin|kind)", re.I)
    for text in ("REMEMBER", "Remember", "ſKIN", "KİND", "kınd", "\u212aind"):
        assert re.fullmatch("(?:remember|skin|kind)", text, re.I), text
        assert present(folded(text), needles), text


# the statement rules ------------------------------------------------------------------------


def _every_rule(text: str) -> list[statements.Statement]:
    """`statements(text)` with every rule run, whatever the text holds."""
    every = (1 << len(statements.RULES)) - 1
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(statements, "_possible", lambda text: every)
        return statements.statements(text)


def _texts() -> list[str]:
    lines = [
        json.loads(line)["text"]
        for name in ("extraction_corpus.jsonl", "extraction_heldout.jsonl")
        for line in (ROOT / "tests" / "data" / name).read_text("utf-8").splitlines()
        if line
    ]
    chat = (ROOT / "tests" / "data" / "chat_lines_zh_en.txt").read_text("utf-8").splitlines()
    own = ["本人女", "本人女，95年的", "其实本人男"]  # self-introductions without a rule's literal
    return lines + chat + own


def test_the_rules_left_out_would_have_read_nothing_in_the_corpus_and_chat_lines() -> None:
    texts = _texts()
    found = 0
    for text in texts:
        read = statements.statements(text)
        assert read == _every_rule(text), text
        found += bool(read)
    assert found > 120  # most of the corpus holds statements: the comparison covers them


def _rule_literals() -> list[str]:
    return sorted(statements._prefilter().needles)


_FRAGMENTS = [*_rule_literals(), "我", "乌龙茶", "猫", "Berlin", "tea", "a nurse", "I", "I'm", "my"]
_FRAGMENTS += ["，", "。", "？", "!", " ", "其实", "btw", "用英文回答我", "REMEMBER THAT", "吗"]
_FRAGMENTS += ["本人", "女", "95年的"]  # a self-introduction: read with no rule's literal in it


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=7), st.sampled_from(["", " "]))
def test_the_rules_left_out_would_have_read_nothing(parts: list[str], glue: str) -> None:
    text = glue.join(parts)
    assert statements.statements(text) == _every_rule(text)


def test_most_rules_are_left_out_of_an_ordinary_chat_line() -> None:
    lines = (ROOT / "tests" / "data" / "chat_lines_zh_en.txt").read_text("utf-8").splitlines()
    tried = sum(bin(statements._possible(line)).count("1") for line in lines)
    assert tried < len(lines) * len(statements.RULES) / 5
