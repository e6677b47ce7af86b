"""Reading statements people make about themselves: the rule table behind extraction (its
regular expressions are in `statement_patterns`; how a message is cut into sentences and clauses,
and trimmed, in `clauses`).

Each sentence is cut into clauses; at each clause start (after filler such as "其实", "btw") the
rules of `RULES` are tried in order and the first that fits wins. A rule is tried only when the
sentence holds one of the literals its every match holds (`needles.required`: "过敏", "remind
me"), so an ordinary chat line runs a few of the 76 patterns, not all. A clause rule must cover its
whole clause ("我喜欢乌龙茶"); a sentence rule takes the rest of the sentence ("提醒我明天交报告，
别迟到"). What a wrapper captures ("记住…", "以后…") is read again; a statement found there
("记住我叫小明") wins with the higher confidence. A Chinese clause that leaves out its subject
right after one of the speaker's statements is read as the speaker's ("我现在不喜欢红茶，喜欢绿茶":
two preferences), though not after a pet ("我养了一只猫，特别粘人").

What a statement holds, so that the injected line ("- [m_x] preference · user · 2025-05-01:
喜欢乌龙茶") makes sense: preferences and facts about the speaker as a predicate without its
subject, in the speaker's language ("喜欢乌龙茶", "名字是小明", "对花生过敏", "不吃香菜", "是护士",
"likes oolong tea", "lives in Berlin", "allergic to peanuts", "works as a nurse"); decisions,
tasks and explicit remembers as said, without the trigger (a decision keeps its "以后…/from now
on…", which says the rule lasts). Trailing punctuation, emoji and particles are stripped, and so
are words that only say "as of now" ("我现在不喜欢红茶" → "不喜欢红茶"). Ignored: questions
(though "能提醒我…吗？" still counts as a request), reported speech and quotes, code blocks,
captures too short or too long, pronoun or question-word objects ("我爱你"), one-off requests
("用英文回答我：…").

Slots say what a later statement replaces: `pref:<object>` for likes, dislikes and diet (`slot_key`
drops a leading 吃/喝… before two or more characters, so "我不吃香菜" and "我喜欢吃香菜" share
`pref:香菜`, "我不能吃辣" and "我喜欢吃辣" `pref:吃辣`), `allergy:<object>`, `fav:<what>`,
`pet:<animal>`, `petname:<animal>`, `learning:<subject>`, and one value each for name, nickname,
home, hometown, birthday, age, job, workplace, diet, `reply:language`, `reply:style`,
`reply:tone`, `reply:emoji` and `reply:avoid:<language>`. How the speaker wants to be answered
("以后回答我都用英文", "以后还是用中文回答我吧", "以后回答简短一点", "别用 emoji", "from now on
answer me in English") is a behavioural rule (kind `procedure`) of the speaker; said without "me"
("以后回复都用英文", "换回中文吧", "不要用韩语", "From now on, answer in English") a rule of the
chat, which extraction keeps with the speaker unless a group's owner or admin said it.
"从现在起，用英文回答我" (no lasting word after the trigger) stays a decision of the chat. Those
patterns, and what each one says, are in `answer_patterns`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from nahida.memory.write import answer_patterns as a
from nahida.memory.write import statement_patterns as p
from nahida.memory.write.clauses import LEAD, clause_spans, is_question, plain, sentences, trim
from nahida.memory.write.needles import Prefilter, ones

MIN_TEXT, MAX_TEXT = 3, 1000  # characters of a message worth reading
MAX_CLAUSE_VALUE, MAX_SENTENCE_VALUE = 60, 200

Reach = Literal["clause", "sentence"]
About = Literal["speaker", "chat", "said"]  # said: first person in the words → the speaker
Wrap = Literal["", "explicit", "decision"]
Values = dict[str, str]
Content = str | Callable[[Values, str], str]  # a template, or (values, whole match) → content
Slot = str | Callable[[Values], str] | None  # a template over slot_key of the groups, or a function
SENTENCE: Reach = "sentence"
LANGUAGE = "reply:language"  # the slot of the language to answer in


@dataclass(frozen=True, slots=True)
class Rule:
    """`slot` and `content` are templates over the groups: `v` (value), `o` (object; `slot_key`
    normalises it in a slot), `d`, `verb`, and `{whole}` (the match); a wrapper re-reads `v`.
    Only `o` and `v` are trimmed; other groups are words of the pattern. A group `x2` stands in
    for `x` in another alternative of the pattern. `carry`: a following clause without a subject
    ("…，喜欢绿茶") may be read as this speaker's; `asked`: also read in a request ("能不能…？"),
    as tasks, explicit remembers and how to answer are."""

    pattern: str
    kind: str
    confidence: float
    slot: Slot
    content: Content
    reach: Reach = "clause"
    about: About = "speaker"
    wrap: Wrap = ""
    carry: bool = False
    asked: bool = False

    @property
    def regex(self) -> re.Pattern[str]:
        return _compiled(self.pattern)


@dataclass(frozen=True, slots=True)
class Statement:
    """`triggered`: said after a trigger ("记住…", "提醒我…", "remind me to…"), which `content`
    leaves out."""

    kind: str
    content: str
    slot: str | None
    confidence: float
    about: Literal["speaker", "chat"]
    quote: str = ""
    triggered: bool = False


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


_EN_NOT = {"don't": "doesn't", "dont": "doesn't", "do not": "doesn't", "cannot": "can't"}
_EN_NOT |= {"cant": "can't", "wont": "won't"}


def _en_diet(values: Values, whole: str) -> str:
    """ "I don't eat pork" → "doesn't eat pork"; "I never drink coffee" → "never drinks coffee"."""
    neg = " ".join(values["neg"].lower().split())
    neg = _EN_NOT.get(neg, neg)
    verb = values["e"].lower() + ("s" if neg in ("never", "no longer") else "")
    return f"{neg} {verb} {values['o']}"


def _en_fan(values: Values, whole: str) -> str:
    """ "I'm not a big fan of X" → "is not a big fan of X"; "I'm a huge Arsenal fan" → "is a
    huge Arsenal fan"; "I'm not a morning person" → "is not a morning person"."""
    words = [*values["d"].lower().split(), *values["o"].split()]
    article = "an" if words and words[0][:1].lower() in "aeiou" else "a"
    if values["kind"]:  # "an Arsenal fan", "a morning person"
        words.append(values["kind"].lower())
    else:  # "a fan of X"
        article, words = "a", [*values["d"].lower().split(), "fan of", values["o"]]
    return " ".join(["is", *values["neg"].lower().split(), article, *words])


def _food_slot(values: Values) -> str:
    """ "不吃香菜" fills the slot of "喜欢吃香菜" (pref:香菜), "不能吃辣" that of "喜欢吃辣"."""
    return "pref:" + slot_key(values["e"] + values["o"])


def _health_zh(values: Values, whole: str) -> str:
    return "是" + values["v"] if values["v"] in ("左撇子", "路痴") else values["v"]


def _health_en(values: Values, whole: str) -> str:
    """ "I'm diabetic" → "is diabetic"; "I get carsick easily" → "gets carsick easily"."""
    return ("gets " if re.match(r"i\s+get\b", whole, re.IGNORECASE) else "is ") + values["v"]


def _health_slot(values: Values) -> str:
    """One slot per condition: "近视800度" → health:近视, "left-handed" → health:handed."""
    key = re.sub(r"\d.*|\s+easily$", "", values["v"].lower())
    return "health:" + ("handed" if key in ("左撇子", "left-handed", "right-handed") else key)


def _learning(values: Values, whole: str) -> str:
    return ("开始学" if values["verb"].startswith("开始") else "在学") + values["o"]


# Tried in this order; the first rule that reads a clause wins. `carry=True`: the speaker's, so
# a following clause without a subject is the speaker's too.
RULES: tuple[Rule, ...] = (
    # explicit: 0.95; what is remembered is read again for its kind and slot
    Rule(p.REMEMBER_ZH, "fact", 0.95, None, "{v}", SENTENCE, "said", "explicit"),
    Rule(p.REMEMBER_EN, "fact", 0.95, None, "{v}", SENTENCE, "said", "explicit"),
    # how to answer: behavioural rules (procedures) of the speaker ("…我…", also when asked for)
    # or, said without "me", of the chat; before "以后…" reads them as a decision of the chat
    Rule(a.REPLY_ZH, "procedure", 0.8, LANGUAGE, "希望用{v}回答", asked=True),
    Rule(a.SWITCH_ME_ZH, "procedure", 0.8, LANGUAGE, "希望用{v}回答", asked=True),
    Rule(a.REPLY_STYLE_ZH, "procedure", 0.8, "reply:style", "希望回答{v}", asked=True),
    Rule(a.TONE_ME_ZH, "procedure", 0.8, "reply:tone", "希望回答{v}", asked=True),
    Rule(a.REPLY_EN, "procedure", 0.8, LANGUAGE, a.reply_en, asked=True),
    Rule(a.REPLY_ME_EN, "procedure", 0.8, LANGUAGE, a.reply_en, asked=True),
    Rule(a.REPLY_RULE_ZH, "procedure", 0.8, LANGUAGE, "用{v}回答", about="chat", asked=True),
    Rule(a.SWITCH_ZH, "procedure", 0.8, LANGUAGE, "用{v}回答", about="chat", asked=True),
    Rule(a.AVOID_ZH, "procedure", 0.8, "reply:avoid:{v}", "不要用{v}回答", about="chat"),
    Rule(a.STYLE_RULE_ZH, "procedure", 0.8, "reply:style", "回答{v}", about="chat", asked=True),
    Rule(a.TONE_ZH, "procedure", 0.8, "reply:tone", "回答{v}", about="chat", asked=True),
    Rule(a.EMOJI_ZH, "procedure", 0.8, "reply:emoji", a.emoji_zh, about="chat", asked=True),
    Rule(a.EMOJI_MORE_ZH, "procedure", 0.8, "reply:emoji", "多用{v}", about="chat"),
    Rule(a.REPLY_RULE_EN, "procedure", 0.8, LANGUAGE, a.answer_en, about="chat", asked=True),
    Rule(a.SWITCH_EN, "procedure", 0.8, LANGUAGE, a.answer_en, about="chat", asked=True),
    Rule(a.AVOID_EN, "procedure", 0.8, "reply:avoid:{v}", a.avoid_en, about="chat"),
    Rule(a.STYLE_EN, "procedure", 0.8, "reply:style", a.style_en, about="chat", asked=True),
    Rule(a.TONE_EN, "procedure", 0.8, "reply:tone", a.tone_en, about="chat", asked=True),
    Rule(a.EMOJI_EN, "procedure", 0.8, "reply:emoji", a.emoji_en, about="chat", asked=True),
    Rule(a.EMOJI_MORE_EN, "procedure", 0.8, "reply:emoji", a.more_emoji_en, about="chat"),
    Rule(p.NICK_ZH, "preference", 0.8, "nickname", "希望被叫作{v}", asked=True),
    Rule(p.NICK_EN, "preference", 0.8, "nickname", "wants to be called {v}", asked=True),
    # decisions: the words as said, trigger included; "I decided" stays with the speaker
    Rule(p.DECIDED_I, "decision", 0.8, None, "{whole}", SENTENCE, "speaker", "decision"),
    Rule(p.DECIDED_ZH, "decision", 0.8, None, "{whole}", SENTENCE, "chat", "decision"),
    Rule(p.FROM_NOW_ZH, "decision", 0.8, None, "{whole}", SENTENCE, "chat", "decision"),
    Rule(p.DECIDED_EN, "decision", 0.8, None, "{whole}", SENTENCE, "chat", "decision"),
    # tasks: what to do, as said
    Rule(p.REMIND_ZH, "task", 0.7, None, "{t}{v}", SENTENCE),
    Rule(p.FORGET_ZH, "task", 0.7, None, "{v}", SENTENCE),
    Rule(p.TODO, "task", 0.7, None, "{v}", SENTENCE),
    Rule(p.REMIND_EN, "task", 0.7, None, "{v}", SENTENCE),
    Rule(p.FORGET_EN, "task", 0.7, None, "{v}", SENTENCE),
    # identity: one value per slot, a new one supersedes
    Rule(p.NAME_ZH, "fact", 0.85, "name", "名字是{v}", carry=True),
    Rule(p.CALLED_ZH, "fact", 0.85, "name", "名字是{v}", carry=True),
    Rule(p.NAME_EN, "fact", 0.85, "name", "name is {v}"),
    Rule(p.HOME_ZH, "fact", 0.85, "home", "住在{v}", carry=True),
    Rule(p.MOVED_ZH, "fact", 0.85, "home", "住在{v}", carry=True),
    Rule(p.HOME_EN, "fact", 0.85, "home", "lives in {v}"),
    Rule(p.MOVED_EN, "fact", 0.85, "home", "lives in {v}"),
    Rule(p.BIRTHDAY_ZH, "fact", 0.85, "birthday", "生日是{v}", carry=True),
    Rule(p.BIRTHDAY_ON_ZH, "fact", 0.85, "birthday", "生日是{v}", carry=True),
    Rule(p.BIRTHDAY_EN, "fact", 0.85, "birthday", "birthday is {v}"),
    Rule(p.BORN_ZH, "fact", 0.85, "birthyear", "{v}年出生", carry=True),
    Rule(p.GENDER_ZH, "fact", 0.85, "gender", "是{v}生", carry=True),
    Rule(p.AGE_ZH, "fact", 0.85, "age", "{v}岁", carry=True),
    Rule(p.AGE_EN, "fact", 0.85, "age", "is {v} years old"),
    Rule(p.HOMETOWN_ZH, "fact", 0.85, "hometown", "是{v}人", carry=True),
    Rule(p.OLD_HOME_ZH, "fact", 0.85, "hometown", "老家{verb}{v}", carry=True),
    Rule(p.FROM_ZH, "fact", 0.85, "hometown", "来自{v}", carry=True),
    Rule(p.FROM_EN, "fact", 0.85, "hometown", "is from {v}"),
    Rule(p.JOB_ZH, "fact", 0.85, "job", "是{v}", carry=True),
    Rule(p.TRADE_ZH, "fact", 0.85, "job", "是{verb}{v}", carry=True),
    Rule(p.WORKPLACE_ZH, "fact", 0.85, "workplace", "在{v}{verb}", carry=True),
    Rule(p.JOB_EN, "fact", 0.85, "job", "is {a} {v}"),
    Rule(p.WORK_AS_EN, "fact", 0.85, "job", "works as {a} {v}"),
    Rule(p.WORK_AT_EN, "fact", 0.85, "workplace", "works {verb} {v}"),
    # health and diet: allergies and conditions are facts; what someone eats or not is a
    # preference in the object's slot, so "我不吃香菜" supersedes "我喜欢吃香菜"
    Rule(p.ALLERGY_ZH, "fact", 0.85, "allergy:{o}", "对{o}{neg}过敏", carry=True),
    Rule(p.ALLERGY_BARE_ZH, "fact", 0.85, "allergy:{o}", "对{o}{neg}过敏", carry=True),
    Rule(p.ALLERGY_EN, "fact", 0.85, "allergy:{o}", "{neg}allergic to {o}"),
    Rule(p.HEALTH_ZH, "fact", 0.85, _health_slot, _health_zh, carry=True),
    Rule(p.HEALTH_EN, "fact", 0.85, _health_slot, _health_en),
    Rule(p.VEGETARIAN_ZH, "preference", 0.8, "diet", "吃素", carry=True),
    Rule(p.VEGETARIAN_EN, "preference", 0.8, "diet", "is {v}"),
    Rule(p.DIET_ZH, "preference", 0.8, _food_slot, "{neg}{e}{o}", carry=True),
    Rule(p.DIET_CANT_ZH, "preference", 0.8, _food_slot, "{e}{neg}{o}", carry=True),
    Rule(p.DIET_EN, "preference", 0.8, "pref:{o}", _en_diet),
    # pets (a clause after one is about the pet, so no carry), learning, "我的X是Y"
    Rule(p.PET_ZH, "fact", 0.85, "pet:{o}", "{verb}{n}{m}{o}"),
    Rule(p.PET_NAME_ZH, "fact", 0.85, "petname:{o}", "{o}叫{v}"),
    Rule(p.PET_EN, "fact", 0.85, "pet:{p}", "has {n} {o}"),
    Rule(p.PET_NAME_EN, "fact", 0.85, "petname:{o}", "{o}'s name is {v}"),
    Rule(p.LEARNING_ZH, "fact", 0.8, "learning:{o}", _learning, carry=True),
    Rule(p.LEARNING_EN, "fact", 0.8, "learning:{o}", "is learning {o}"),
    Rule(p.MY_ATTRIBUTE_ZH, "fact", 0.85, "my:{o}", "{o}是{v}", carry=True),
    # preferences: one per object, so "我不喜欢乌龙茶了" supersedes "我喜欢乌龙茶"
    Rule(p.FAVOURITE_ZH, "preference", 0.8, "fav:{o}", "最{verb}的{o}是{v}", carry=True),
    Rule(p.FAVOURITE_EN, "preference", 0.8, "fav:{o}", "favourite {o} is {v}"),
    Rule(p.FAN_EN, "preference", 0.8, "pref:{o}", _en_fan),
    Rule(p.PREF_ZH, "preference", 0.8, "pref:{o}", "{d}{verb}{o}", carry=True),
    Rule(p.DISLIKE_ZH, "preference", 0.8, "pref:{o}", "{verb}{o}", carry=True),
    Rule(p.PREF_EN, "preference", 0.8, "pref:{o}", _en_preference),
)

# --- reading ------------------------------------------------------------------------------

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
_SELF = "本人"  # "本人女，95年的": the speaker, in QQ self-introductions
_LATIN = re.compile(r"[A-Za-z0-9 '\-]+")
_OWN_SUBJECT = re.compile(r"[^\u4e00-\u9fff0-9]|我|你|您|他|她|它|这|那|大家|咱|别人|有人|谁")
_SLOT_VERB_ZH = re.compile(r"^(?:喝|吃|玩|看|听|用|穿|去|做|养|读|学|打)(?=..)")
_SLOT_WORDS_EN = _compiled(
    r"^(?:(?:to|drinking|eating|playing|watching|listening to|reading|using|wearing|going to"
    r"|doing|having|the|a|an|some)\s+)+"
)


def slot_key(value: str) -> str:
    """The part of a slot that names its object: "喝乌龙茶" and "乌龙茶" give "乌龙茶"."""
    key = " ".join(trim(value).casefold().split())
    key = _SLOT_WORDS_EN.sub("", key)
    return _SLOT_VERB_ZH.sub("", key).strip()


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


def _values(match: re.Match[str]) -> Values:
    values = match.groupdict(default="")
    for name, value in list(values.items()):
        if name.endswith("2") and value and not values.get(name[:-1]):
            values[name[:-1]] = value  # the other alternative's group
    return {k: trim(v) if k in ("o", "v") else v for k, v in values.items()}


def _build(rule: Rule, match: re.Match[str], depth: int) -> Statement | None:
    values = _values(match)
    if not _acceptable(values, rule):
        return None
    if rule.wrap and depth == 0:
        inner = _read_all(values["v"], depth + 1)
        if inner is not None:
            triggered = inner.triggered or rule.wrap == "explicit"
            return replace(
                inner, confidence=max(inner.confidence, rule.confidence), triggered=triggered
            )
    whole = trim(match.group(0))
    template = rule.content
    content = trim(
        template(values, whole) if callable(template) else template.format(whole=whole, **values)
    )
    slot = None
    if callable(rule.slot):
        slot = rule.slot(values)
    elif rule.slot is not None:
        slot = rule.slot.format(**{k: slot_key(v) for k, v in values.items()})
    about = rule.about
    if about == "said":
        about = "speaker" if _FIRST_PERSON.search(content) else "chat"
    triggered = rule.wrap == "explicit" or rule.kind == "task"  # every task rule has a trigger
    return Statement(rule.kind, content, slot, rule.confidence, about, triggered=triggered)


@functools.cache
def _prefilter() -> Prefilter:
    return Prefilter((rule.pattern, re.IGNORECASE) for rule in RULES)


def warm_up() -> None:
    """Every rule compiled and their prefilter built now (~30 ms here), not by the first
    messages that reach them while every chat waits on the event loop (`memory.startup`)."""
    _prefilter()
    for rule in RULES:
        _compiled(rule.pattern)


def _possible(text: str) -> int:
    """The rules (bit i: `RULES[i]`) that may match somewhere in `text`; any text they are then
    run on must lie inside it."""
    return _prefilter().possible(text)


def _match(
    body: str,
    start: int,
    end: int,
    depth: int,
    requests_only: bool = False,
    carried: bool = False,
    possible: int | None = None,
) -> tuple[Statement, Rule] | None:
    """The first rule that reads `body` from `start` (a clause ending at `end`), and the rule;
    `carried`: only the rules whose subject a clause may leave out; `possible`: `_possible` of
    a text holding `body[start:]` (computed when not given)."""
    clause, rest = trim(body[start:end]), ""
    if possible is None:
        possible = _possible(body[start:])
    for bit in ones(possible):  # the rules whose literals are in the text, in order
        rule = RULES[bit]
        if rule.wrap == "explicit" and depth > 0:
            continue
        if requests_only and not (rule.asked or rule.wrap == "explicit" or rule.kind == "task"):
            continue
        if carried and not rule.carry:
            continue
        if rule.reach == "clause":
            found = rule.regex.fullmatch(clause)
        else:
            rest = rest or trim(body[start:])
            found = rule.regex.match(rest)
        statement = _build(rule, found, depth) if found else None
        if statement is not None:
            return statement, rule
    return None


def _carried(clause: str) -> tuple[Statement, Rule] | None:
    """A Chinese clause without a subject after one of the speaker's ("…，喜欢绿茶"), read as
    the speaker's."""
    if not clause or _OWN_SUBJECT.match(clause):
        return None
    text = "我" + clause
    return _match(text, 0, len(text), 0, carried=True)


def _read_all(text: str, depth: int) -> Statement | None:
    """A statement that covers all of `text` (one clause, or a sentence rule), if any."""
    spans = clause_spans(text)
    if not spans:
        return None
    start = LEAD.match(text, spans[0][0]).end()  # type: ignore[union-attr]
    found = _match(text, start, spans[0][1], depth)
    if found is None:
        return None
    statement, rule = found
    return statement if len(spans) == 1 or rule.reach == "sentence" else None


def _read_sentence(sentence: str) -> list[Statement]:
    if sentence.startswith((">", "＞")):
        return []
    body, requests_only = sentence, False
    if is_question(sentence):
        request = _REQUEST.match(sentence)
        if request is None:
            return []
        body, requests_only = _QUESTION_TAIL.sub("", sentence[request.end() :]), True
    statements: list[Statement] = []
    checked, carrier = 0, False
    possible = _possible(body)  # once for all of its clauses
    for start, end in clause_spans(body):
        lead = LEAD.match(body, start).end()  # type: ignore[union-attr]
        if _REPORTED.search(body, max(0, checked - 3), lead):
            break  # someone else's words from here on
        checked = lead
        if lead >= end:
            continue
        found = _match(body, lead, end, 0, requests_only, possible=possible)
        clause = trim(body[lead:end])
        if found is None and clause.startswith(_SELF):  # QQ self-introductions: "本人女，95年的"
            found = _carried(clause[2:])
        elif found is None and carrier:
            found = _carried(clause)
        if found is None:
            carrier = False
            continue
        statement, rule = found
        statements.append(replace(statement, quote=sentence))
        if rule.reach == "sentence":
            break  # the rule took the rest of the sentence
        carrier = rule.carry
    return statements


def statements(text: str) -> list[Statement]:
    """What a user's message says that is worth remembering, in order, without duplicates."""
    if not MIN_TEXT <= len(text.strip()) <= MAX_TEXT:
        return []
    text = plain(text)
    if not _possible(text) and _SELF not in text:
        # no rule's literal anywhere (most chat lines): no clause can match, nor be carried
        # (a clause is carried after one that matched, or after 本人), so none is read
        return []
    seen: dict[tuple[str, str | None, str], Statement] = {}
    for sentence in sentences(text):
        for statement in _read_sentence(sentence):
            seen.setdefault((statement.kind, statement.slot, statement.content), statement)
    return list(seen.values())


def slot_for(text: str) -> str | None:
    """The slot a remembered text fills ("我喜欢乌龙茶" → "pref:乌龙茶"), for `/memory remember`."""
    for statement in statements(text):
        if statement.slot:
            return statement.slot
    return None
