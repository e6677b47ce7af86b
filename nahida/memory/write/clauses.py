"""How a message is cut for reading statements (`statements`): into sentences and clauses, each
clause started after filler words ("其实", "btw": `LEAD`) and trimmed of trailing punctuation,
particles, emoji and filler ("…lol")."""

from __future__ import annotations

import re
import unicodedata

_SENTENCE = re.compile(r"(?:[^。！!？?；;.\n]|\.(?!\s|$))+[。！!？?；;.]*")
_CLAUSE_BREAK = re.compile(  # (?<!\s): tried once per run of spaces, not at each of them
    r"(?<!以后)(?<!今后)(?<!往后)(?<!from now on)(?<!going forward)[，,]\s*"  # "以后，…" stays one
    r"|(?:因为|所以|但是|不过(?!敏)|可是|而且)|(?<!\s)\s+(?:because|since|but|though|although)\s+"
    r"|(?<!\s)\s+and\s+(?=(?:i|my|we|let'?s)\b)",
    re.IGNORECASE,
)
LEAD = re.compile(
    r"(?:(?:其实|嗯|哦|噢|啊|对了|另外|还有|顺便说?一?下|顺便|告诉你|跟你说|和你说|说真的|老实说|话说"
    r"|(?:btw|by the way|actually|also|oh|well|and|ok|okay|hey|hi|so|fyi)\b)[\s，,、:：!！~～]*)*",
    re.IGNORECASE,
)
_TAIL = frozenset("。.!！?？~～…,，;；:：、'\"“”」』)）")
_PARTICLES = frozenset("了啦啊呀哦喔噢呢哈嘛吧的耶")  # dropped at the end after a Han character
_FILLERS: tuple[str, ...] = ("anymore", "any more", "now", "too", "either", "a lot", "lol")
_FILLERS += ("very much", "so much", "haha", "though", "honestly")
_FILLER_TAILS = tuple(" " + word for word in _FILLERS)
_EN_QUESTION = re.compile(
    r"(?:do|does|did|what|who|whom|where|when|why|how|is|are|am|was|were|can|could|would|should"
    r"|will|which|have|has)\b",
    re.IGNORECASE,
)
_CODE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_EMOJI_PARTS = frozenset("\ufe0e\ufe0f\u200d\u20e3")


def trim(text: str) -> str:
    """Without surrounding space and trailing punctuation, particles and filler words.

    A loop from the end, not a `…+$` regex: those take quadratic time on long runs of spaces."""
    text = text.strip()
    end = len(text)
    while end:
        char = text[end - 1]
        after_han = end > 1 and "\u4e00" <= text[end - 2] <= "\u9fff"
        if (
            char.isspace()
            or char in _TAIL
            or (char in _PARTICLES and after_han)
            or char in _EMOJI_PARTS
            or unicodedata.category(char) in ("So", "Sk")  # emoji, modifiers
        ):
            end -= 1
        else:
            tail = text[max(0, end - 12) : end].lower()
            if not tail.endswith(_FILLER_TAILS):
                break
            end -= len(next(w for w in _FILLERS if tail.endswith(" " + w)))
    return text[:end]


def plain(text: str) -> str:
    """`text` as its sentences are read: straight apostrophes, code blocks as line breaks."""
    return _CODE.sub("\n", text.replace("’", "'").replace("‘", "'"))


def sentences(text: str) -> list[str]:
    """The sentences of a `plain` text."""
    return [m.group(0).strip() for m in _SENTENCE.finditer(text) if m.group(0).strip()]


def clause_spans(sentence: str) -> list[tuple[int, int]]:
    """(start, end) of each clause of a sentence."""
    spans, start = [], 0
    for brk in _CLAUSE_BREAK.finditer(sentence):
        spans.append((start, brk.start()))
        start = brk.end()
    spans.append((start, len(sentence)))
    return [(s, e) for s, e in spans if s < e]


def is_question(sentence: str) -> bool:
    """Ends with a question mark or 吗/么, or starts as an English question does."""
    s = sentence.strip()
    return bool(re.search(r"[?？]\s*$|[吗么]\s*$", s)) or bool(_EN_QUESTION.match(s))
