"""Reading statements people make about themselves: the rule table behind extraction.

Each sentence is cut into clauses; at each clause start (after filler such as "其实", "btw") the
rules of `RULES` are tried in order and the first that fits wins. A clause rule must cover its
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
home, hometown, birthday, age, job, workplace, diet, `reply:language` and `reply:style`. How the
speaker wants to be answered ("以后回答我都用英文", "from now on answer me in English") is a
preference about the speaker, not a procedure: preferences commit at once in the default
`auto_safe` mode, procedures would wait for `/memory review`. "从现在起，用英文回答我" and "From now
on, answer in English" (no lasting word after the trigger, or no "me") stay decisions of the chat.
"""

from __future__ import annotations

import functools
import re
import unicodedata
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
Slot = str | Callable[[Values], str] | None  # a template over slot_key of the groups, or a function
SENTENCE: Reach = "sentence"


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


def _reply_en(values: Values, whole: str) -> str:
    return f"wants answers in {values['v'].capitalize()}"


# Patterns (case-insensitive; matched at a clause start, after filler words).
_REMEMBER_ZH = (
    r"(?:请你?|你要|你得|帮我|麻烦你?|给我)?(?:记住|记下来|记下|记一下)(?:了|哦)?"
    r"[，,:：\s]*(?P<v>.+)"
)
_REMEMBER_EN = (
    r"(?:please\s+)?(?:remember|keep in mind)(?:\s+that)?\s*[:,]?\s+"
    r"(?!(?:when|how|what|who|where|why|the time|to|me|you)\b)(?P<v>.+)"
)
# How I want to be answered: lasting ("以后", "我都", "always", "from now on") and about me. A
# one-off "用英文回答我：…" is not, and "从现在起，用英文回答我" stays the chat's decision.
_LASTING_ZH = r"(?=.*(?:以后|今后|往后|从此|一律|统一|一直|总是|永远|始终|每次|我都|时候都|时都))"
_LATER_ZH = r"(?:(?:以后|今后|往后|从此)[，,\s]*)?(?:你|请|麻烦|就)*"
_TO_ME_ZH = (
    r"(?:(?:回答|回复|答复|回)我(?:的(?:问题|消息))?"
    r"|(?:跟|和|对|给)我(?:回复|回答|说话|讲话|聊天|交流)?)"
)
_ALWAYS_ZH = r"(?:都|就|一律|统一|一直|总是|永远|始终|只|全|全部|尽量)*"
_LANGS_ZH = (
    r"中文|汉语|普通话|英文|英语|日语|日文|韩语|韩文|法语|德语|俄语|西班牙语|粤语|繁体中文|简体中文"
    r"|繁体字|简体字|繁体|简体|文言文|english|chinese|japanese"
)
_REPLY_ZH = (
    rf"{_LASTING_ZH}(?=.*我){_LATER_ZH}(?:{_TO_ME_ZH}(?:的时候|时)?[，,\s]*(?:请|你)*)?"
    rf"{_ALWAYS_ZH}(?:用|说|讲)(?P<v>{_LANGS_ZH})(?:来?(?:{_TO_ME_ZH}|回答|回复|回|说|讲))?"
    r"(?:就行|就好|就可以|好吗|可以吗|谢谢)?"
)
_REPLY_STYLE_ZH = (
    rf"{_LASTING_ZH}{_LATER_ZH}(?:回答|回复|答复|回)我(?:的(?:问题|消息))?(?:的时候|时)?[，,\s]*"
    rf"(?:请|你)*{_ALWAYS_ZH}(?P<v>(?:简短|简洁|简单|精简|详细|具体|短|长)(?:一?点|一些|些)?)"
)
_LASTING_EN = r"(?:from now on|going forward|from today on|from here on|always|in (?:the )?future)"
_REPLY_EN = (
    rf"(?=.*\b{_LASTING_EN}\b)(?:(?:from now on|going forward|from today on|from here on)[,\s]+)?"
    r"(?:please\s+)?(?:(?:always|only)\s+)?(?:answer|reply|respond|talk|speak|write|text|chat)"
    r"(?:\s+(?:to|with))?\s+me\s+(?:only\s+)?in\s+(?P<v>english|chinese|mandarin|japanese|korean"
    rf"|french|german|spanish|cantonese)(?:\s+(?:{_LASTING_EN}|please))*"
)
_NICK_ZH = (  # "叫我小北就行", "你可以叫我阿杰", "以后叫我老王" (not "叫我起床")
    r"(?=.*(?:以后|今后|可以|就好|就行|就可以|好了))(?:(?:以后|今后)[，,\s]*)?(?:你们?|大家)?都?"
    r"(?:可以|就)?(?:直接)?(?:叫|喊|称呼)我\s*(?!起床|吃饭|一声|一下|过去|回来|出去|起来|出来)"
    r"(?![去来吃喝干做帮陪睡别不起回出])(?P<v>[^\s，,]{1,6}?)(?:就(?:好|行|可以)了?|好了|吧)?"
)
_NICK_EN = (  # "you can call me Sam", "I go by Alex" (not "call me when you land")
    r"(?:(?:(?:you can|you may|please|just|everyone|pls)\s+)+(?:just\s+)?call me|i\s+go\s+by)\s+"
    r"(?P<v>(?-i:[A-Z])[\w'-]{1,20}(?:\s+(?-i:[A-Z])[\w'-]{1,20})?)"
    r"(?:\s+(?:instead|for short|from now on|going forward|please))*"
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
_WHEN_ZH = (  # "每天早上提醒我喝水", "明天记得提醒我…": the time belongs to the task
    r"(?P<t>(?:每天|每周[一二三四五六日天]?|每个?月|每晚|明天|后天|今晚|今天|晚上|早上|下午|中午"
    r"|周[一二三四五六日天末]|下周[一二三四五六日天]?)[^，,提记]{0,8}?)?"
)
_REMIND_ZH = _WHEN_ZH + r"(?:记得)?提醒我(?:一下)?[，,:：\s]*(?P<v>.+)"
_FORGET_ZH = r"(?:别|不要)忘(?:了|记)?[，,:：\s]*(?P<v>.+)"
_TODO = r"(?:待办(?:事项)?|todo|to-do)\s*[:：]\s*(?P<v>.+)"
_REMIND_EN = r"remind me(?:\s+to|\s+that|\s+about)?\s+(?P<v>.+)"
_FORGET_EN = r"(?:(?:don'?t|do not)\s+(?:let me\s+)?forget|remember)(?:\s+to|\s+about)?\s+(?P<v>.+)"
_NAME_ZH = r"我的?名字(?:是|叫)\s*(?P<v>\S{1,8})"
_CALLED_ZH = r"我叫\s*(?P<v>\S{1,6})"
_NAME_EN = r"my name(?:'s| is)\s+(?P<v>\w[\w'-]*(?:\s+[A-Z][\w'-]*){0,3})"
_PLACE_EN = r"(?-i:[A-Z])[\w'-]*(?:\s+(?-i:[A-Z])[\w'-]*){0,3}"  # capitalised words: "New York"
_HOME_ZH = r"我(?:现在)?(?:住在|家在|坐标)\s*(?P<v>.{2,30})"  # 坐标: QQ for "I'm in"
_MOVED_ZH = r"我(?:刚|已经|最近|去年|今年)*(?:搬到|搬去|搬来)了?(?P<v>[^\s，,]{2,30}?)住?"
_HOME_EN = r"i(?:\s+currently|\s+now)?\s+live\s+in\s+(?P<v>.{2,60})"
_MOVED_EN = (
    rf"i(?:'m| am)\s+(?:now\s+)?based\s+in\s+(?P<v>{_PLACE_EN})"
    rf"|i(?:\s+just|\s+recently)?\s+moved\s+to\s+(?P<v2>{_PLACE_EN})"
    r"(?:\s+(?:last|this|a|two|three|in|recently)\b.*)?"
)
_BIRTHDAY_ZH = r"我的?生日(?:是|在)\s*(?P<v>.{2,30})"
_DATE_ZH = r"\d{1,2}月\d{1,2}[日号]|[一二三四五六七八九十]{1,3}月[一二三四五六七八九十]{1,3}[日号]"
_BIRTHDAY_ON_ZH = rf"我(?:是|的)?(?P<v>{_DATE_ZH})的?生日|我的?生日\s*(?P<v2>{_DATE_ZH})"
_BIRTHDAY_EN = r"my birthday is\s+(?P<v>.{2,40})"
_BORN_ZH = r"我(?:是)?(?P<v>\d{2}|\d{4}|[零〇一二三四五六七八九]{2,4})年(?:生|出生)?的?"  # 95年的
_GENDER_ZH = r"我(?:是)?(?:个|一个)?(?P<v>女|男)(?:生|的|孩子?)?"  # "本人女"
_AGE_ZH = r"我(?:今年|现在|已经)*(?P<v>\d{1,3}|[一二两三四五六七八九十]{1,3})周?岁"
_AGE_EN = r"i(?:'m| am)\s+(?P<v>\d{1,3})(?:\s+years?\s+old|\s+yrs?\s+old|\s*y/?o)?"
_HOMETOWN_ZH = (  # "我是杭州人", not "我是好人", "我是有原则的人"
    r"我是(?!一个|个|好|坏|普通|正常|成年|年轻|老实|文化|文明|明白|外星|机器|有钱|穷|懒|社恐|路|纯"
    r"|局外|自己|中年|老年|主持|负责|联系|介绍|经纪|病|男|女|大|小|老|新|本|外|你|他|她|这|那|什么|哪"
    r"|过来|工具|打工|读书|有福|好心|明眼|圈内|圈外|门外|夜猫|急性)(?P<v>(?:(?!的)[\u4e00-\u9fff]){2,4}?)人"
)
_OLD_HOME_ZH = r"我的?老家(?P<verb>是|在)(?P<v>[^\s，,]{1,15}?)"
_FROM_ZH = r"我(?:来自|是从)(?P<v>[^\s，,]{2,15}?)(?:来的)?"
_FROM_EN = (
    rf"i(?:'m| am)\s+(?:originally\s+)?from\s+(?P<v>{_PLACE_EN})(?:\s+originally)?"
    rf"|i\s+grew\s+up\s+in\s+(?P<v2>{_PLACE_EN})"
)
_ROLES_ZH = (
    r"工程师|程序员|程序猿|码农|老师|教师|医生|护士|设计师|学生|研究生|博士生|博士|本科生|大学生|高中生"
    r"|初中生|律师|会计|产品经理|运营|销售|厨师|司机|警察|作家|画师|插画师|主播|公务员|自由职业者?|前端"
    r"|后端|全栈|测试|翻译|记者|编辑|研究员|分析师|架构师|实习生|财务|创业者|主管|店长|咨询师|建筑师"
    r"|药剂师|兽医|牙医|摄影师|演员|UP主"
)
_JOB_ZH = (  # "我是一名护士", "我是大三学生", not "我是你爹"
    r"我(?:现在|目前|已经|本职)?(?:是|当)(?:一名|一个|一位|名|个|位)?"
    rf"(?P<v>[^\s，,]{{0,8}}?(?:{_ROLES_ZH}))"
)
_TRADE_ZH = r"我(?:现在|目前)?是(?P<verb>做|搞|干)(?!梦)(?P<v>[^\s，,]{2,10}?)的?"  # 是做设计的
_WORKPLACE_ZH = (
    r"我(?:现在|目前|一直|已经)?在(?!家|努力|认真|拼命|好好|偷偷|忙着|找)(?P<v>[^\s，,]{1,15}?)"
    r"(?P<verb>工作|上班|实习|打工|任职)"
)
_ROLES_EN = (
    r"nurse|engineer|developer|dev|programmer|coder|teacher|doctor|physician|student|designer"
    r"|lawyer|accountant|manager|chef|cook|writer|artist|researcher|scientist|consultant|analyst"
    r"|dentist|pharmacist|architect|musician|photographer|journalist|professor|lecturer|intern"
    r"|freelancer|barista|pilot|firefighter|police officer|vet|veterinarian|translator|editor"
    r"|tester|sysadmin|sre|undergrad|postdoc|electrician|plumber|mechanic|cashier|waiter"
    r"|waitress|driver|therapist|psychologist|librarian"
)
_JOB_EN = (  # "I'm a nurse", "I'm a software engineer at a startup", not "I'm a bit tired"
    r"i(?:'m| am)\s+(?:currently\s+|now\s+)?(?P<a>an?)\s+"
    rf"(?P<v>(?:[\w-]+\s+){{0,3}}?(?:{_ROLES_EN})(?:\s+(?:at|in|for)\s+.{{1,40}})?)"
)
_WORK_AS_EN = r"i\s+(?:currently\s+|now\s+)?work\s+as\s+(?P<a>an?)\s+(?P<v>.{2,60})"
_WORK_AT_EN = r"i\s+(?:currently\s+|now\s+)?work\s+(?P<verb>at|for)\s+(?P<v>.{2,60})"
_NOT_KIN = (  # "我妈…", "我老婆…": someone else's
    r"(?!妈|爸|老婆|老公|对象|女朋友|男朋友|女儿|儿子|孩子|家|们|朋友|同事|弟|妹|哥|姐|爷|奶|外公|外婆)"
)
_ALLERGY_ZH = (  # "我对花生过敏", "我吃芒果会过敏"
    r"我(?:也|还|从小就?|一直|有点)*(?:对|吃|一吃|碰|一碰|闻)(?P<o>[^\s，,]{1,15}?)"
    r"(?:就|会|也|都|有点|有些|比较|特别|非常|很|严重|轻微)*(?P<neg>不)?过敏"
)
_ALLERGY_BARE_ZH = (  # "我海鲜过敏", not "我老婆对花生过敏"
    rf"我{_NOT_KIN}(?!是|不是|有点|也|对|吃)(?P<o>[^\s，,]{{1,8}}?)(?:也|有点|比较|特别|严重|轻微)*"
    r"(?P<neg>不)?过敏"
)
_ALLERGY_EN = (
    r"i(?:'m| am)\s+(?P<neg>not\s+)?(?:(?:very|really|severely|mildly|a bit|slightly|deathly|super"
    r"|also|so)\s+)*allergic\s+to\s+(?P<o>.{1,40})"
    r"|i\s+have\s+an?\s+(?:(?:severe|mild|bad|slight)\s+)?(?P<o2>[\w -]{1,30}?)\s+allergy"
)
_HEALTH_ZH = (
    r"我(?:也|还|一直|从小就?|有点|有|比较|很|特别|严重|轻微)*是?(?P<v>晕车|晕船|晕机|恐高|近视(?:\d{2,4}度)?"
    r"|远视|散光|色弱|色盲|乳糖不耐受?|低血糖|高血压|糖尿病|哮喘|鼻炎|痛风|胃病|胃不好|路痴|怕冷|怕热"
    r"|左撇子)"
)
_HEALTH_EN = (
    r"i(?:'m| am)\s+(?P<v>diabetic|lactose intolerant|colou?r ?blind|left-handed|right-handed"
    r"|asthmatic|short-sighted|near-sighted|epileptic|hard of hearing)"
    r"|i\s+get\s+(?P<v2>(?:car|sea|air|motion\s*)sick(?:\s+easily)?)"
)
_VEGETARIAN_ZH = (
    r"我(?:现在|已经|一直|平时)?是?(?:一个|个|一名)?(?:吃素的?|素食主义者|纯?素食者|素食)"
)
_VEGETARIAN_EN = (
    r"i(?:'m| am|'ve been| have been)\s+(?:a\s+)?(?:(?:strict|full|total)\s+)?"
    r"(?P<v>vegetarian|vegan|pescatarian)(?:\s+(?:for|since)\s+.{1,30})?"
)
_DIET_ADV_ZH = r"(?:现在|平时|一般|从小就?|向来|已经|基本上?|根本|完全|也|都|还|真的?|其实|一直)*"
_DIET_ZH = (  # "我不吃香菜", "我从来不喝酒", "我能吃辣" (a taste, not "我能吃三碗饭")
    rf"我{_DIET_ADV_ZH}(?:(?P<neg>不太能|不怎么|不能|不敢|从不|从来不|不再|再也不|一点都不|一点也不|不)"
    r"(?P<e>吃|喝|碰|沾|抽)(?P<o>[^\s，,]{1,20})|(?P<neg2>很能|挺能|特别能|超能|能)(?P<e2>吃)"
    r"(?P<o2>(?:辣|酸|甜|苦|咸|麻|辛辣|重口|生冷)的?))"
)
_DIET_CANT_ZH = rf"我{_DIET_ADV_ZH}(?P<e>吃|喝)(?P<neg>不了|不惯|不下)(?P<o>[^\s，,]{{1,20}})"
_DIET_EN = (
    r"i\s+(?:(?:really|just|also|usually|generally|basically|honestly)\s+)*(?P<neg>don'?t|do not"
    r"|can'?t|cannot|never|no longer|won'?t)\s+(?P<e>eat|drink)\s+(?P<o>.{1,40})"
)
_ANIMALS_ZH = (
    r"猫咪|猫猫|猫|狗狗|狗|兔子|兔|仓鼠|鹦鹉|乌龟|龟|金鱼|鱼|金毛|柯基|哈士奇|柴犬|泰迪|龙猫|刺猬|蜥蜴"
    r"|蛇|鸟"
)
_PET_ZH = (  # "我养了一只猫", "我养了条柯基", "我家有两只狗" (not "我有一个问题")
    r"我(?:家里?|们家)?(?:现在|也|还)?(?:(?P<verb>养了|养着|养)(?P<n>[一二两三四五六七八九十几\d]*)"
    r"(?P<m>只|条|头|匹|个|缸)(?P<o>[^\s，,]{1,8})|(?P<verb2>有)(?P<n2>[一二两三四五六七八九十几\d]+)"
    rf"(?P<m2>只|条|头|匹)(?P<o2>[^\s，,]{{0,4}}?(?:{_ANIMALS_ZH})))"
)
_PET_NAME_ZH = (
    rf"我(?:家|们家)?(?:的|家的)?(?P<o>{_ANIMALS_ZH})(?:叫|名叫|的名字叫|的名字是|名字叫|名字是)"
    r"(?P<v>[^\s，,]{1,8})"
)
_PETS_EN = (
    r"cat|dog|puppy|kitten|rabbit|bunny|hamster|parrot|turtle|tortoise|goldfish|fish|snake|lizard"
    r"|guinea pig|corgi|husky|beagle|poodle|labrador|retriever|shiba"
)
_PET_EN = (
    r"i(?:\s+have|'ve got|\s+have got|\s+own)\s+(?P<n>an?|one|two|three|four|five|\d+)\s+"
    rf"(?P<o>(?:[\w-]+\s+)?(?P<p>{_PETS_EN})(?:s|es)?)"
)
_PET_NAME_EN = (
    rf"my\s+(?P<o>{_PETS_EN})(?:'s name is|\s+is called|\s+is named|\s+named)\s+"
    r"(?P<v>[\w'-]{2,20})"
)
_LEARNING_ZH = (  # "我最近在学吉他", not "我在学校门口"
    r"我(?:最近|现在|目前|这阵子|这段时间|今年|每天|一直|也|还)*(?P<verb>正在学习|在学习|正在自学|在自学"
    r"|正在学|在学|开始学习|开始自学|开始学)(?![校院长姐妹弟生霸期费分位历习])(?P<o>[^\s，,]{1,15})"
)
_LEARNING_EN = (
    r"i(?:'m| am|'ve been| have been|\s+(?:just\s+)?started)\s+(?:(?:currently|now|still|also)\s+)?"
    r"learning\s+(?!(?:a lot|lots|so much|a bunch|from|that|this)\b)(?P<o>.{2,40})"
)
_MY_ATTRIBUTE_ZH = (  # "我的邮箱是…", "我的 UID 是…"; not opinions, secrets or someone else
    r"我的\s*(?!意思|想法|建议|问题|理解|看法|观点|感觉|猜测|答案|回答|理由|意见|天|妈|错|锅|老婆|老公"
    r"|对象|女朋友|男朋友|女儿|儿子|孩子|朋友|同事|爸|哥|姐|弟|妹|最爱|最喜欢)"
    r"(?P<o>(?:(?!密码|口令|password|token|key)[^\s，,的是：:]){1,10}?)"
    r"\s*(?:是|叫|:|：|\s(?=[a-z0-9@]))\s*(?P<v>[^\s，,].{0,40})"
)
# "我现在不喜欢…", "我平时喜欢…": as of now, not part of what is liked
_NOW_ZH = r"(?:现在|如今|目前|已经|其实|还是|平时|一般|本来|向来|从小就?|这几年|最近)*"
_FAVOURITE_ZH = r"我最(?P<verb>喜欢|爱)的(?P<o>.{1,12}?)(?:就是|是)(?P<v>.{1,30})"
_FAVOURITE_EN = r"my (?:fav(?:ou?rite)|fave)\s+(?P<o>[\w ]{1,30}?)\s+is\s+(?P<v>.{1,40})"
_FAN_EN = (  # "I'm a big fan of X", "I'm a huge Arsenal fan", "I'm not a morning person"
    r"i(?:'m| am)\s+(?P<neg>not\s+)?an?\s+(?P<d>(?:(?:big|huge|great|massive|die-hard|real)\s+)*)"
    r"(?:fan\s+of\s+(?P<o>.{1,60})|(?P<o2>(?!(?:bit|lot|little|few|big|huge|great)\b)[\w'-]+"
    r"(?:\s+[\w'-]+)?)\s+(?P<kind>fan|person))"
)
_PREF_ZH = (
    rf"我{_NOW_ZH}(?P<d>(?:也|还|真的?|很|挺|超级?|特别|非常|比较|蛮|一直|都|最|更|贼|巨|越来越)*)"
    r"(?P<verb>不太喜欢|不怎么喜欢|不喜欢|不爱|喜欢上了|喜欢上|喜欢|爱上了|爱上|爱|讨厌|受不了|偏爱)"
    r"(?!(.)不\1)(?P<o>.{1,40})"  # not "我爱吃不吃"
)
_DISLIKE_ZH = r"(?P<verb>讨厌|受不了)(?P<o>.{1,40})"
_PREF_EN = (
    r"i\s+(?P<d>(?:(?:really|truly|totally|absolutely|also|still|just|kinda|do)\s+)*)"
    r"(?P<verb>don'?t\s+(?:really\s+)?like|do\s+not\s+(?:really\s+)?like|can'?t\s+stand|like|love"
    r"|prefer|enjoy|hate|dislike|adore)\s+(?P<o>.{1,60})"
)

# Tried in this order; the first rule that reads a clause wins. `carry=True`: the speaker's, so
# a following clause without a subject is the speaker's too.
RULES: tuple[Rule, ...] = (
    # explicit: 0.95; what is remembered is read again for its kind and slot
    Rule(_REMEMBER_ZH, "fact", 0.95, None, "{v}", SENTENCE, "said", "explicit"),
    Rule(_REMEMBER_EN, "fact", 0.95, None, "{v}", SENTENCE, "said", "explicit"),
    # how to answer me and what to call me: the speaker's preference (also when asked for),
    # before "以后…" reads them as a decision of the chat
    Rule(_REPLY_ZH, "preference", 0.8, "reply:language", "希望用{v}回答", asked=True),
    Rule(_REPLY_STYLE_ZH, "preference", 0.8, "reply:style", "希望回答{v}", asked=True),
    Rule(_REPLY_EN, "preference", 0.8, "reply:language", _reply_en, asked=True),
    Rule(_NICK_ZH, "preference", 0.8, "nickname", "希望被叫作{v}", asked=True),
    Rule(_NICK_EN, "preference", 0.8, "nickname", "wants to be called {v}", asked=True),
    # decisions: the words as said, trigger included; "I decided" stays with the speaker
    Rule(_DECIDED_I, "decision", 0.8, None, "{whole}", SENTENCE, "speaker", "decision"),
    Rule(_DECIDED_ZH, "decision", 0.8, None, "{whole}", SENTENCE, "chat", "decision"),
    Rule(_FROM_NOW_ZH, "decision", 0.8, None, "{whole}", SENTENCE, "chat", "decision"),
    Rule(_DECIDED_EN, "decision", 0.8, None, "{whole}", SENTENCE, "chat", "decision"),
    # tasks: what to do, as said
    Rule(_REMIND_ZH, "task", 0.7, None, "{t}{v}", SENTENCE),
    Rule(_FORGET_ZH, "task", 0.7, None, "{v}", SENTENCE),
    Rule(_TODO, "task", 0.7, None, "{v}", SENTENCE),
    Rule(_REMIND_EN, "task", 0.7, None, "{v}", SENTENCE),
    Rule(_FORGET_EN, "task", 0.7, None, "{v}", SENTENCE),
    # identity: one value per slot, a new one supersedes
    Rule(_NAME_ZH, "fact", 0.85, "name", "名字是{v}", carry=True),
    Rule(_CALLED_ZH, "fact", 0.85, "name", "名字是{v}", carry=True),
    Rule(_NAME_EN, "fact", 0.85, "name", "name is {v}"),
    Rule(_HOME_ZH, "fact", 0.85, "home", "住在{v}", carry=True),
    Rule(_MOVED_ZH, "fact", 0.85, "home", "住在{v}", carry=True),
    Rule(_HOME_EN, "fact", 0.85, "home", "lives in {v}"),
    Rule(_MOVED_EN, "fact", 0.85, "home", "lives in {v}"),
    Rule(_BIRTHDAY_ZH, "fact", 0.85, "birthday", "生日是{v}", carry=True),
    Rule(_BIRTHDAY_ON_ZH, "fact", 0.85, "birthday", "生日是{v}", carry=True),
    Rule(_BIRTHDAY_EN, "fact", 0.85, "birthday", "birthday is {v}"),
    Rule(_BORN_ZH, "fact", 0.85, "birthyear", "{v}年出生", carry=True),
    Rule(_GENDER_ZH, "fact", 0.85, "gender", "是{v}生", carry=True),
    Rule(_AGE_ZH, "fact", 0.85, "age", "{v}岁", carry=True),
    Rule(_AGE_EN, "fact", 0.85, "age", "is {v} years old"),
    Rule(_HOMETOWN_ZH, "fact", 0.85, "hometown", "是{v}人", carry=True),
    Rule(_OLD_HOME_ZH, "fact", 0.85, "hometown", "老家{verb}{v}", carry=True),
    Rule(_FROM_ZH, "fact", 0.85, "hometown", "来自{v}", carry=True),
    Rule(_FROM_EN, "fact", 0.85, "hometown", "is from {v}"),
    Rule(_JOB_ZH, "fact", 0.85, "job", "是{v}", carry=True),
    Rule(_TRADE_ZH, "fact", 0.85, "job", "是{verb}{v}", carry=True),
    Rule(_WORKPLACE_ZH, "fact", 0.85, "workplace", "在{v}{verb}", carry=True),
    Rule(_JOB_EN, "fact", 0.85, "job", "is {a} {v}"),
    Rule(_WORK_AS_EN, "fact", 0.85, "job", "works as {a} {v}"),
    Rule(_WORK_AT_EN, "fact", 0.85, "workplace", "works {verb} {v}"),
    # health and diet: allergies and conditions are facts; what someone eats or not is a
    # preference in the object's slot, so "我不吃香菜" supersedes "我喜欢吃香菜"
    Rule(_ALLERGY_ZH, "fact", 0.85, "allergy:{o}", "对{o}{neg}过敏", carry=True),
    Rule(_ALLERGY_BARE_ZH, "fact", 0.85, "allergy:{o}", "对{o}{neg}过敏", carry=True),
    Rule(_ALLERGY_EN, "fact", 0.85, "allergy:{o}", "{neg}allergic to {o}"),
    Rule(_HEALTH_ZH, "fact", 0.85, _health_slot, _health_zh, carry=True),
    Rule(_HEALTH_EN, "fact", 0.85, _health_slot, _health_en),
    Rule(_VEGETARIAN_ZH, "preference", 0.8, "diet", "吃素", carry=True),
    Rule(_VEGETARIAN_EN, "preference", 0.8, "diet", "is {v}"),
    Rule(_DIET_ZH, "preference", 0.8, _food_slot, "{neg}{e}{o}", carry=True),
    Rule(_DIET_CANT_ZH, "preference", 0.8, _food_slot, "{e}{neg}{o}", carry=True),
    Rule(_DIET_EN, "preference", 0.8, "pref:{o}", _en_diet),
    # pets (a clause after one is about the pet, so no carry), learning, "我的X是Y"
    Rule(_PET_ZH, "fact", 0.85, "pet:{o}", "{verb}{n}{m}{o}"),
    Rule(_PET_NAME_ZH, "fact", 0.85, "petname:{o}", "{o}叫{v}"),
    Rule(_PET_EN, "fact", 0.85, "pet:{p}", "has {n} {o}"),
    Rule(_PET_NAME_EN, "fact", 0.85, "petname:{o}", "{o}'s name is {v}"),
    Rule(_LEARNING_ZH, "fact", 0.8, "learning:{o}", _learning, carry=True),
    Rule(_LEARNING_EN, "fact", 0.8, "learning:{o}", "is learning {o}"),
    Rule(_MY_ATTRIBUTE_ZH, "fact", 0.85, "my:{o}", "{o}是{v}", carry=True),
    # preferences: one per object, so "我不喜欢乌龙茶了" supersedes "我喜欢乌龙茶"
    Rule(_FAVOURITE_ZH, "preference", 0.8, "fav:{o}", "最{verb}的{o}是{v}", carry=True),
    Rule(_FAVOURITE_EN, "preference", 0.8, "fav:{o}", "favourite {o} is {v}"),
    Rule(_FAN_EN, "preference", 0.8, "pref:{o}", _en_fan),
    Rule(_PREF_ZH, "preference", 0.8, "pref:{o}", "{d}{verb}{o}", carry=True),
    Rule(_DISLIKE_ZH, "preference", 0.8, "pref:{o}", "{verb}{o}", carry=True),
    Rule(_PREF_EN, "preference", 0.8, "pref:{o}", _en_preference),
)

# --- reading ------------------------------------------------------------------------------

_SENTENCE = re.compile(r"(?:[^。！!？?；;.\n]|\.(?!\s|$))+[。！!？?；;.]*")
_CLAUSE_BREAK = re.compile(  # (?<!\s): tried once per run of spaces, not at each of them
    r"(?<!以后)(?<!今后)(?<!往后)(?<!from now on)(?<!going forward)[，,]\s*"  # "以后，…" stays one
    r"|(?:因为|所以|但是|不过(?!敏)|可是|而且)|(?<!\s)\s+(?:because|since|but|though|although)\s+"
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
_OWN_SUBJECT = re.compile(r"[^\u4e00-\u9fff0-9]|我|你|您|他|她|它|这|那|大家|咱|别人|有人|谁")
_EMOJI_PARTS = frozenset("\ufe0e\ufe0f\u200d\u20e3")
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
            return replace(inner, confidence=max(inner.confidence, rule.confidence))
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
    return Statement(rule.kind, content, slot, rule.confidence, about)


def _match(
    body: str, start: int, end: int, depth: int, requests_only: bool = False, carried: bool = False
) -> tuple[Statement, Rule] | None:
    """The first rule that reads `body` from `start` (a clause ending at `end`), and the rule;
    `carried`: only the rules whose subject a clause may leave out."""
    clause, rest = trim(body[start:end]), trim(body[start:])
    for rule in RULES:
        if rule.wrap == "explicit" and depth > 0:
            continue
        if requests_only and not (rule.asked or rule.wrap == "explicit" or rule.kind == "task"):
            continue
        if carried and not rule.carry:
            continue
        found = rule.regex.fullmatch(clause) if rule.reach == "clause" else rule.regex.match(rest)
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
    spans = _clause_starts(text)
    if not spans:
        return None
    start = _LEAD.match(text, spans[0][0]).end()  # type: ignore[union-attr]
    found = _match(text, start, spans[0][1], depth)
    if found is None:
        return None
    statement, rule = found
    return statement if len(spans) == 1 or rule.reach == "sentence" else None


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
    checked, carrier = 0, False
    for start, end in _clause_starts(body):
        lead = _LEAD.match(body, start).end()  # type: ignore[union-attr]
        if _REPORTED.search(body, max(0, checked - 3), lead):
            break  # someone else's words from here on
        checked = lead
        if lead >= end:
            continue
        found = _match(body, lead, end, 0, requests_only)
        clause = trim(body[lead:end])
        if found is None and clause.startswith("本人"):  # QQ self-introductions: "本人女，95年的"
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
