"""Reading statements people make about themselves: the rule table behind extraction.

Each sentence is cut into clauses; at each clause start (after filler such as "其实", "btw") the
rules of `RULES` are tried in order and the first that fits wins. A clause rule must cover its
whole clause ("我喜欢乌龙茶"); a sentence rule takes the rest of the sentence ("提醒我明天交报告，
别迟到"). What a wrapper captures ("记住…", "以后…") is read again; a statement found there
("记住我叫小明") wins with the higher confidence.

What a statement holds, so that the injected line ("- [m_x] preference · user · 2025-05-01:
喜欢乌龙茶") makes sense: preferences and identity facts as a predicate without its subject, in the
speaker's language ("喜欢乌龙茶", "名字是小明", "likes oolong tea", "lives in Berlin"); decisions,
tasks and explicit remembers as said, without the trigger (a decision keeps its "以后…/from now
on…", which says the rule lasts). Trailing punctuation and particles are stripped. Ignored:
questions (though "能提醒我…吗？" still counts as a request), reported speech and quotes, code
blocks, captures too short or too long, pronoun or question-word objects ("我爱你").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

MIN_TEXT, MAX_TEXT = 3, 1000  # characters of a message worth reading
MAX_CLAUSE_VALUE, MAX_SENTENCE_VALUE = 60, 200

Reach = Literal["clause", "sentence"]
About = Literal["speaker", "chat", "said"]  # said: first person in the words → the speaker
Wrap = Literal["", "explicit", "decision"]
Values = dict[str, str]
Content = str | Callable[[Values, str], str]  # a template, or (values, whole match) → content
SENTENCE: Reach = "sentence"


@dataclass(frozen=True, slots=True)
class Rule:
    """`slot` and `content` are templates over the groups: `v` (value), `o` (object; `slot_key`
    normalises it in a slot), `d`, `verb`, and `{whole}` (the match); a wrapper re-reads `v`."""

    pattern: str
    kind: str
    confidence: float
    slot: str | None
    content: Content
    reach: Reach = "clause"
    about: About = "speaker"
    wrap: Wrap = ""

    @property
    def regex(self) -> re.Pattern[str]:
        return _compiled(self.pattern)


@dataclass(frozen=True, slots=True)
class Statement:
    kind: str
    content: str
    slot: str | None
    confidence: float
    about: Literal["speaker", "chat"]
    quote: str = ""


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _en_preference(values: Values, whole: str) -> str:
    """ "I really don't like X" → "really doesn't like X"."""
    verb = " ".join(values["verb"].lower().split())
    if verb.startswith(("don", "do not")):
        verb = "doesn't really like" if "really" in verb else "doesn't " + verb.split()[-1]
    elif " " not in verb:
        verb += "s"  # like, love, prefer, enjoy, hate, dislike, adore
    degree = " ".join(w for w in values["d"].lower().split() if w != "do")
    return " ".join(part for part in (degree, verb, values["o"]) if part)


# Patterns (case-insensitive; matched at a clause start, after filler words).
_REMEMBER_ZH = (
    r"(?:请你?|你要|你得|帮我|麻烦你?|给我)?(?:记住|记下来|记下|记一下)(?:了|哦)?"
    r"[，,:：\s]*(?P<v>.+)"
)
_REMEMBER_EN = (
    r"(?:please\s+)?(?:remember|keep in mind)(?:\s+that)?\s*[:,]?\s+"
    r"(?!(?:when|how|what|who|where|why|the time|to|me|you)\b)(?P<v>.+)"
)
_DECIDED_I = r"(?:我决定|i(?:'ve| have)? decided)(?:\s+that|\s+to)?[，,:：\s]*(?P<v>.+)"
_DECIDED_ZH = (
    r"(?:从现在起|从现在开始|从今天起|从今天开始|从今以后|(?:我们|咱们|大家)决定(?:了)?|决定了|说好了)"
    r"[，,:：\s]*(?P<v>.+)"
)
_FROM_NOW_ZH = (
    r"(?:以后|今后)[，,\s]*(?=我们|咱们|大家|你|请|都|每|统一|一律|不要|别|不许|禁止|记得|一直|总是"
    r"|尽量|只)(?P<v>.+)"
)
_DECIDED_EN = (
    r"(?:from now on|going forward|from today on|we(?:'ve| have)? (?:decided|agreed)(?: that| to)?"
    r"|let'?s always|let'?s never|let us always)[,:\s]*(?P<v>.+)"
)
_REMIND_ZH = r"(?:记得)?提醒我(?:一下)?[，,:：\s]*(?P<v>.+)"
_FORGET_ZH = r"(?:别|不要)忘(?:了|记)?[，,:：\s]*(?P<v>.+)"
_TODO = r"(?:待办(?:事项)?|todo|to-do)\s*[:：]\s*(?P<v>.+)"
_REMIND_EN = r"remind me(?:\s+to|\s+that|\s+about)?\s+(?P<v>.+)"
_FORGET_EN = r"(?:(?:don'?t|do not)\s+(?:let me\s+)?forget|remember)(?:\s+to|\s+about)?\s+(?P<v>.+)"
_NAME_ZH = r"我的?名字(?:是|叫)\s*(?P<v>\S{1,8})"
_CALLED_ZH = r"我叫\s*(?P<v>\S{1,6})"
_NAME_EN = r"my name(?:'s| is)\s+(?P<v>\w[\w'-]*(?:\s+[A-Z][\w'-]*){0,3})"
_HOME_ZH = r"我(?:现在)?(?:住在|家在)\s*(?P<v>.{2,30})"
_HOME_EN = r"i(?:\s+currently|\s+now)?\s+live\s+in\s+(?P<v>.{2,60})"
_BIRTHDAY_ZH = r"我的?生日(?:是|在)\s*(?P<v>.{2,30})"
_BIRTHDAY_EN = r"my birthday is\s+(?P<v>.{2,40})"
_FAVOURITE_ZH = r"我最喜欢的(?P<o>.{1,12}?)(?:就是|是)(?P<v>.{1,30})"
_FAVOURITE_EN = r"my fav(?:ou?rite)\s+(?P<o>[\w ]{1,30}?)\s+is\s+(?P<v>.{1,40})"
_PREF_ZH = (
    r"我(?P<d>(?:也|还|真的?|很|挺|超|特别|非常|比较|蛮|一直|都|最)*)"
    r"(?P<verb>不太喜欢|不怎么喜欢|不喜欢|不爱|喜欢|爱|讨厌|受不了|偏爱)(?P<o>.{1,40})"
)
_DISLIKE_ZH = r"(?P<verb>讨厌|受不了)(?P<o>.{1,40})"
_PREF_EN = (
    r"i\s+(?P<d>(?:(?:really|truly|totally|absolutely|also|still|just|kinda|do)\s+)*)"
    r"(?P<verb>don'?t\s+(?:really\s+)?like|do\s+not\s+(?:really\s+)?like|can'?t\s+stand|like|love"
    r"|prefer|enjoy|hate|dislike|adore)\s+(?P<o>.{1,60})"
)

# Tried in this order; the first rule that reads a clause wins.
RULES: tuple[Rule, ...] = (
    # explicit: 0.95; what is remembered is read again for its kind and slot
    Rule(_REMEMBER_ZH, "fact", 0.95, None, "{v}", SENTENCE, "said", "explicit"),
    Rule(_REMEMBER_EN, "fact", 0.95, None, "{v}", SENTENCE, "said", "explicit"),
    # decisions: the words as said, trigger included; "I decided" stays with the speaker
    Rule(_DECIDED_I, "decision", 0.8, None, "{whole}", SENTENCE, "speaker", "decision"),
    Rule(_DECIDED_ZH, "decision", 0.8, None, "{whole}", SENTENCE, "chat", "decision"),
    Rule(_FROM_NOW_ZH, "decision", 0.8, None, "{whole}", SENTENCE, "chat", "decision"),
    Rule(_DECIDED_EN, "decision", 0.8, None, "{whole}", SENTENCE, "chat", "decision"),
    # tasks: what to do, as said
    Rule(_REMIND_ZH, "task", 0.7, None, "{v}", SENTENCE),
    Rule(_FORGET_ZH, "task", 0.7, None, "{v}", SENTENCE),
    Rule(_TODO, "task", 0.7, None, "{v}", SENTENCE),
    Rule(_REMIND_EN, "task", 0.7, None, "{v}", SENTENCE),
    Rule(_FORGET_EN, "task", 0.7, None, "{v}", SENTENCE),
    # identity: one value per slot, a new one supersedes
    Rule(_NAME_ZH, "fact", 0.85, "name", "名字是{v}"),
    Rule(_CALLED_ZH, "fact", 0.85, "name", "名字是{v}"),
    Rule(_NAME_EN, "fact", 0.85, "name", "name is {v}"),
    Rule(_HOME_ZH, "fact", 0.85, "home", "住在{v}"),
    Rule(_HOME_EN, "fact", 0.85, "home", "lives in {v}"),
    Rule(_BIRTHDAY_ZH, "fact", 0.85, "birthday", "生日是{v}"),
    Rule(_BIRTHDAY_EN, "fact", 0.85, "birthday", "birthday is {v}"),
    # preferences: one per object, so "我不喜欢乌龙茶了" supersedes "我喜欢乌龙茶"
    Rule(_FAVOURITE_ZH, "preference", 0.8, "fav:{o}", "最喜欢的{o}是{v}"),
    Rule(_FAVOURITE_EN, "preference", 0.8, "fav:{o}", "favourite {o} is {v}"),
    Rule(_PREF_ZH, "preference", 0.8, "pref:{o}", "{d}{verb}{o}"),
    Rule(_DISLIKE_ZH, "preference", 0.8, "pref:{o}", "{verb}{o}"),
    Rule(_PREF_EN, "preference", 0.8, "pref:{o}", _en_preference),
)

# --- reading ------------------------------------------------------------------------------

_SENTENCE = re.compile(r"(?:[^。！!？?；;.\n]|\.(?!\s|$))+[。！!？?；;.]*")
_CLAUSE_BREAK = re.compile(  # (?<!\s): tried once per run of spaces, not at each of them
    r"[，,]\s*|(?:因为|所以|但是|不过|可是|而且)|(?<!\s)\s+(?:because|since|but|though|although)\s+"
    r"|(?<!\s)\s+and\s+(?=(?:i|my|we|let'?s)\b)",
    re.IGNORECASE,
)
_LEAD = re.compile(
    r"(?:(?:其实|嗯|哦|噢|啊|对了|另外|还有|顺便说?一?下|顺便|告诉你|跟你说|和你说|说真的|老实说|话说"
    r"|(?:btw|by the way|actually|also|oh|well|and|ok|okay|hey|hi|so|fyi)\b)[\s，,、:：!！~～]*)*",
    re.IGNORECASE,
)
_TAIL = frozenset("。.!！?？~～…,，;；:：、'\"“”」』)）")
_PARTICLES = frozenset("了啦啊呀哦喔噢呢哈嘛吧的耶")  # dropped at the end after a Han character
_FILLERS: tuple[str, ...] = ("anymore", "any more", "now", "too", "either", "a lot", "lol")
_FILLERS += ("very much", "so much", "haha", "though", "honestly")
_EN_QUESTION = _compiled(
    r"(?:do|does|did|what|who|whom|where|when|why|how|is|are|am|was|were|can|could|would|should"
    r"|will|which|have|has)\b"
)
_REQUEST = _compiled(
    r"(?:(?:can|could|would|will) you\s+(?:please\s+)?|please\s+"
    r"|能不能|能否|可不可以|可以|能|麻烦你?|请你?)"
)
_QUESTION_TAIL = re.compile(r"(?:吗|么)?[\s?？!！。.~～]*$")
_WH = _compiled(
    r"什么(?!都|也)|啥|谁|哪|多少|怎么|为什么|为啥|如何|\b(?:what|which|who|whom|whose|how)\b"
)
_BAD_START = _compiled(
    r"(?:你|您|他|她|它|这|那|了|着|过|的|死|得|上了|(?:it|you|him|her|them|this|that|these|those"
    r"|your|here|there)\b)"
)
_REPORTED = _compiled(
    r"[“”\"「」『』]|(?<!我)(?:说|讲|问|写道|告诉我)|(?<!\bi )\b(?:said|says|told me|asked|wrote)\b"
)
_FIRST_PERSON = _compiled(r"我(?!们)|\b(?:i|me|my|mine|i'm|i've|myself)\b")
_CODE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_LATIN = re.compile(r"[A-Za-z0-9 '\-]+")
_SLOT_VERB_ZH = re.compile(r"^(?:喝|吃|玩|看|听|用|穿|去|做|养|读|学|打)(?=..)")
_SLOT_WORDS_EN = _compiled(
    r"^(?:(?:to|drinking|eating|playing|watching|listening to|reading|using|wearing|going to"
    r"|doing|having|the|a|an|some)\s+)+"
)


def slot_key(value: str) -> str:
    """The part of a slot that names its object: "喝乌龙茶" and "乌龙茶" give "乌龙茶"."""
    key = " ".join(trim(value).casefold().split())
    key = _SLOT_WORDS_EN.sub("", key)
    return _SLOT_VERB_ZH.sub("", key)


def trim(text: str) -> str:
    """Without surrounding space and trailing punctuation, particles and filler words.

    A loop from the end, not a `…+$` regex: those take quadratic time on long runs of spaces."""
    text = text.strip()
    end = len(text)
    while end:
        char = text[end - 1]
        after_han = end > 1 and "\u4e00" <= text[end - 2] <= "\u9fff"
        if char.isspace() or char in _TAIL or (char in _PARTICLES and after_han):
            end -= 1
        else:
            tail = text[max(0, end - 12) : end].lower()
            word = next((w for w in _FILLERS if tail.endswith(" " + w)), None)
            if word is None:
                break
            end -= len(word)
    return text[:end]


def _sentences(text: str) -> list[str]:
    text = _CODE.sub("\n", text.replace("’", "'").replace("‘", "'"))
    return [m.group(0).strip() for m in _SENTENCE.finditer(text) if m.group(0).strip()]


def _clause_starts(sentence: str) -> list[tuple[int, int]]:
    """(start, end) of each clause of a sentence."""
    spans, start = [], 0
    for brk in _CLAUSE_BREAK.finditer(sentence):
        spans.append((start, brk.start()))
        start = brk.end()
    spans.append((start, len(sentence)))
    return [(s, e) for s, e in spans if s < e]


def _is_question(sentence: str) -> bool:
    s = sentence.strip()
    return bool(re.search(r"[?？]\s*$|[吗么]\s*$", s)) or bool(_EN_QUESTION.match(s))


def _acceptable(values: Values, rule: Rule) -> bool:
    limit = MAX_CLAUSE_VALUE if rule.reach == "clause" else MAX_SENTENCE_VALUE
    for name in ("o", "v"):
        value = values.get(name)
        if value is None:
            continue
        if not value or len(value) > limit or not re.search(r"\w", value):
            return False
        if _LATIN.fullmatch(value) and len(value.strip()) < 2:
            return False
        if rule.reach == "clause" and (_BAD_START.match(value) or _WH.search(value)):
            return False
        if rule.reach == "sentence" and len(value) < 2:
            return False
    return True


def _build(rule: Rule, match: re.Match[str], depth: int) -> Statement | None:
    values = {k: trim(v) for k, v in match.groupdict(default="").items()}
    if not _acceptable(values, rule):
        return None
    if rule.wrap and depth == 0:
        inner = _read_all(values["v"], depth + 1)
        if inner is not None:
            return replace(inner, confidence=max(inner.confidence, rule.confidence))
    whole = trim(match.group(0))
    template = rule.content
    content = trim(
        template(values, whole) if callable(template) else template.format(whole=whole, **values)
    )
    slot = None
    if rule.slot is not None:
        slot = rule.slot.format(**{k: slot_key(v) for k, v in values.items()})
    about = rule.about
    if about == "said":
        about = "speaker" if _FIRST_PERSON.search(content) else "chat"
    return Statement(rule.kind, content, slot, rule.confidence, about)


def _match(
    body: str, start: int, end: int, depth: int, requests_only: bool = False
) -> tuple[Statement, Reach] | None:
    """The first rule that reads `body` from `start` (a clause ending at `end`), and its reach."""
    clause, rest = trim(body[start:end]), trim(body[start:])
    for rule in RULES:
        if rule.wrap == "explicit" and depth > 0:
            continue
        if requests_only and not (rule.wrap == "explicit" or rule.kind == "task"):
            continue
        found = rule.regex.fullmatch(clause) if rule.reach == "clause" else rule.regex.match(rest)
        statement = _build(rule, found, depth) if found else None
        if statement is not None:
            return statement, rule.reach
    return None


def _read_all(text: str, depth: int) -> Statement | None:
    """A statement that covers all of `text` (one clause, or a sentence rule), if any."""
    spans = _clause_starts(text)
    if not spans:
        return None
    start = _LEAD.match(text, spans[0][0]).end()  # type: ignore[union-attr]
    found = _match(text, start, spans[0][1], depth)
    if found is None:
        return None
    statement, reach = found
    return statement if len(spans) == 1 or reach == "sentence" else None


def _read_sentence(sentence: str) -> list[Statement]:
    if sentence.startswith((">", "＞")):
        return []
    body, requests_only = sentence, False
    if _is_question(sentence):
        request = _REQUEST.match(sentence)
        if request is None:
            return []
        body, requests_only = _QUESTION_TAIL.sub("", sentence[request.end() :]), True
    statements: list[Statement] = []
    checked = 0
    for start, end in _clause_starts(body):
        lead = _LEAD.match(body, start).end()  # type: ignore[union-attr]
        if _REPORTED.search(body, max(0, checked - 3), lead):
            break  # someone else's words from here on
        checked = lead
        if lead >= end:
            continue
        found = _match(body, lead, end, 0, requests_only)
        if found is None:
            continue
        statement, reach = found
        statements.append(replace(statement, quote=sentence))
        if reach == "sentence":
            break  # the rule took the rest of the sentence
    return statements


def statements(text: str) -> list[Statement]:
    """What a user's message says that is worth remembering, in order, without duplicates."""
    if not MIN_TEXT <= len(text.strip()) <= MAX_TEXT:
        return []
    seen: dict[tuple[str, str | None, str], Statement] = {}
    for sentence in _sentences(text):
        for statement in _read_sentence(sentence):
            seen.setdefault((statement.kind, statement.slot, statement.content), statement)
    return list(seen.values())


def slot_for(text: str) -> str | None:
    """The slot a remembered text fills ("我喜欢乌龙茶" → "pref:乌龙茶"), for `/memory remember`."""
    for statement in statements(text):
        if statement.slot:
            return statement.slot
    return None
