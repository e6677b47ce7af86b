"""How people ask to be answered: the patterns of the behavioural-rule statements
(`statements.RULES` reads them, at a clause start, case-insensitively) and the contents they give.
Each family has a slot, so that a newer rule replaces the older one of the same person or chat:

    reply:language      "以后回答我都用英文", "以后还是用中文回答我吧", "换回中文吧", "switch back
                        to Chinese", "English from now on, please", "speak English with me from
                        now on"
    reply:avoid:<lang>  "不要用韩语", "don't answer in Korean"
    reply:style         "以后回答简短一点", "以后回答我详细一点", "from now on keep answers short"
    reply:tone          "以后说话正式一点", "以后跟我说话随意一点", "from now on be more formal"
    reply:emoji         "别用 emoji", "以后少用点表情", "no emojis please", "from now on, use
                        more emoji"

Lasting: a rule needs a word that says it lasts ("以后", "我都", "always", "from now on"), but for
a switch ("换回中文", "switch to English"), which lasts by what it says, and for "不要用…"
(emoji, a language). A one-off "用英文回答我：…" is none, and "从现在起，用英文回答我" stays the
chat's decision. About "me" ("…我…", "…me…") a rule is the speaker's; without, the chat's (which
extraction keeps with the speaker unless a group's owner or admin said it). A clause rule must
cover its whole clause, so "换成中文输入法了" or "标题里别用 emoji" are not rules.
"""

from __future__ import annotations

Values = dict[str, str]

LASTING_ZH = r"(?=.*(?:以后|今后|往后|从此|一律|统一|一直|总是|永远|始终|每次|我都|时候都|时都))"
LATER_ZH = r"(?:(?:你|请)?(?:以后|今后|往后|从此)[，,\s]*)?(?:你|请|麻烦|就|还是)*"
TO_ME_ZH = (
    r"(?:(?:回答|回复|答复|回)我(?:的(?:问题|消息))?"
    r"|(?:跟|和|对|给)我(?:回复|回答|说话|讲话|聊天|交流)?)"
)
ALWAYS_ZH = r"(?:都|就|一律|统一|一直|总是|永远|始终|只|全|全部|尽量)*"
LANGS_ZH = (
    r"中文|汉语|普通话|英文|英语|日语|日文|韩语|韩文|法语|德语|俄语|西班牙语|粤语|繁体中文|简体中文"
    r"|繁体字|简体字|繁体|简体|文言文|english|chinese|japanese"
)
_ANSWERED_ZH = r"(?:来?(?:回答|回复|回|说|讲|交流|聊天|说话))?"
REPLY_ZH = (
    rf"{LASTING_ZH}(?=.*我){LATER_ZH}(?:{TO_ME_ZH}(?:的时候|时)?[，,\s]*(?:请|你)*)?"
    rf"{ALWAYS_ZH}(?:用|说|讲)(?P<v>{LANGS_ZH})(?:来?(?:{TO_ME_ZH}|回答|回复|回|说|讲))?"
    r"(?:就行|就好|就可以|好吗|可以吗|谢谢)?"
)
REPLY_RULE_ZH = (  # "以后回复都用英文", "以后都用中文回答" (no "我": the chat's)
    rf"{LASTING_ZH}{LATER_ZH}(?:你的?)?(?:回复|回答|答复|说话|聊天|交流)?{ALWAYS_ZH}(?:要|请|得)?"
    rf"(?:用|说|讲)(?P<v>{LANGS_ZH}){_ANSWERED_ZH}(?:吧|就行|就好|就可以|谢谢)?"
)
_SWITCH_ZH = (  # "换回中文", "以后都换成英文回复", "还是用中文吧", "用回中文"
    rf"{LATER_ZH}(?:都|就|请)*(?:(?:咱们|我们)?(?:还是)?(?:换回|切回|改回|切换回|换成|改成|切换到|切换成"
    rf"|切到|换到|改用|换用|用回|说回)(?:用|说)?|还是(?:用|说|讲))(?P<v>{LANGS_ZH}){_ANSWERED_ZH}"
)
SWITCH_ME_ZH = _SWITCH_ZH + r"我(?:吧|好了|就行|就好)?"
SWITCH_ZH = _SWITCH_ZH + r"(?:吧|好了|就行|就好)?"
AVOID_ZH = (  # "不要用韩语", "以后别再用日语回复了"
    rf"{LATER_ZH}(?:不要|别|不准|不许|禁止|不能)(?:再)?(?:用|说|讲)(?P<v>{LANGS_ZH})"
    r"(?:来?(?:回答|回复|回|说话|讲话|交流|聊天))?了?"
)
_STYLES_ZH = (
    r"(?:简短|简洁|简单|精简|详细|具体|短|长)(?:一?点|一些|些)?|控制在[^，,]{1,10}?以内"
    r"|不(?:要)?超过[^，,]{1,10}|(?:别|不要)(?:写|说|讲)?(?:那么|这么|太)(?:长|啰嗦|多)"
)
REPLY_STYLE_ZH = (
    rf"{LASTING_ZH}{LATER_ZH}(?:回答|回复|答复|回)我(?:的(?:问题|消息))?(?:的时候|时)?[，,\s]*"
    rf"(?:请|你)*{ALWAYS_ZH}(?P<v>{_STYLES_ZH})"
)
STYLE_RULE_ZH = (  # "以后回答简短一点", "以后简短点回答", "以后回答控制在三句话以内"
    rf"{LASTING_ZH}(?=.*(?:回答|回复|答复|说话|讲话|写|说|讲)){LATER_ZH}"
    r"(?:(?:你的?)?(?:回答|回复|答复|说话|讲话)(?:的时候|时)?[，,\s]*(?:请|你)*)?"
    rf"{ALWAYS_ZH}(?:要|请|得|能不能|可不可以|可以)?(?:再|更)?(?P<v>{_STYLES_ZH})"
    r"(?:地|的)?(?:回答|回复|说话|讲)?"
)
_TONE_WORDS_ZH = r"(?:正式|随意|随和|轻松|礼貌|客气|口语化|活泼|幽默|严肃|温柔|委婉|直接)"
_TONES_ZH = (
    rf"(?:更)?{_TONE_WORDS_ZH}(?:一?点|一些|些)?|(?:别|不要)(?:那么|这么|太){_TONE_WORDS_ZH}"
)
TONE_ME_ZH = (  # "以后跟我说话随意一点", "以后回答我的时候礼貌一点"
    rf"{LASTING_ZH}{LATER_ZH}{TO_ME_ZH}(?:的时候|时)?[，,\s]*(?:请|你)*{ALWAYS_ZH}(?:要|请|得)?"
    rf"(?:再)?(?P<v>{_TONES_ZH})"
)
TONE_ZH = (  # "以后说话正式一点", "以后语气轻松点"
    rf"{LASTING_ZH}{LATER_ZH}(?:你的?)?(?:回答|回复|说话|讲话|语气|口气|措辞)(?:的时候|时)?[，,\s]*"
    rf"(?:请|你)*{ALWAYS_ZH}(?:要|请|得)?(?:再)?(?P<v>{_TONES_ZH})"
)
_EMOJI_ZH = r"(?:emojis?|表情符号|表情包|表情|颜文字|emoticons?)"
EMOJI_ZH = (  # "别用 emoji", "以后别发表情了", "以后回复不要带表情", "以后少用点表情"
    rf"{LATER_ZH}(?:你的?)?(?:回答|回复|说话|聊天)?(?:里|中|时|的时候)?[，,\s]*(?:都|就|请|你)*"
    r"(?P<neg>尽量不要|尽量别|尽量少|不要|不准|不许|禁止|不用|别|少)(?:再)?(?:用|发|带|加|打|使用)?"
    rf"(?:点|些)?\s*(?P<v>{_EMOJI_ZH})了?"
)
EMOJI_MORE_ZH = (  # "以后多用点表情"
    rf"{LASTING_ZH}{LATER_ZH}(?:你的?)?(?:回答|回复|说话|聊天)?(?:里|中|时|的时候)?[，,\s]*"
    rf"(?:都|就|请|你|可以)*多(?:用|发|带|加)(?:点|些|一些)?\s*(?P<v>{_EMOJI_ZH})"
)

LASTING_EN = r"(?:from now on|going forward|from today on|from here on|always|in (?:the )?future)"
_FROM_NOW_EN = r"(?:(?:from now on|going forward|from today on|from here on)[,\s]+)?"
_LANGS_EN = r"english|chinese|mandarin|japanese|korean|french|german|spanish|cantonese"
_AND_SO_ON_EN = rf"(?:,?\s+(?:{LASTING_EN}|please|again))*"
REPLY_EN = (
    rf"(?=.*\b{LASTING_EN}\b){_FROM_NOW_EN}"
    r"(?:please\s+)?(?:(?:always|only)\s+)?(?:answer|reply|respond|talk|speak|write|text|chat)"
    rf"(?:\s+(?:to|with))?\s+me\s+(?:only\s+)?in\s+(?P<v>{_LANGS_EN}){_AND_SO_ON_EN}"
)
REPLY_ME_EN = (  # "speak English with me from now on", "I'd rather you answered in English …"
    rf"(?=.*\b{LASTING_EN}\b){_FROM_NOW_EN}(?:please\s+)?(?:(?:always|only)\s+)?"
    r"(?:(?:speak|talk|write|chat)\s+(?:only\s+)?(?:in\s+)?(?P<v>"
    + _LANGS_EN
    + r")\s+(?:with|to)\s+me"
    r"|i'?d\s+(?:rather|prefer|like\s+it\s+if)\s+you\s+(?:answered|replied|responded|spoke|wrote"
    r"|answer|reply|respond|speak|write|talked|talk)\s+(?:to\s+me\s+)?in\s+(?P<v2>"
    + _LANGS_EN
    + rf")){_AND_SO_ON_EN}"
)
REPLY_RULE_EN = (  # "From now on, answer in English", "always reply in Chinese"
    rf"(?=.*\b{LASTING_EN}\b){_FROM_NOW_EN}"
    r"(?:please\s+)?(?:(?:always|only)\s+)?(?:answer|reply|respond|talk|speak|write)"
    rf"\s+(?:only\s+)?in\s+(?P<v>{_LANGS_EN}){_AND_SO_ON_EN}"
)
SWITCH_EN = (  # "switch back to Chinese", "let's switch to English", "English from now on"
    r"(?:(?:please|let'?s|let\s+us)\s+)?(?:switch|go|change|get)\s+(?:back\s+)?(?:over\s+)?to\s+"
    rf"(?:answering\s+in\s+|replying\s+in\s+|speaking\s+|using\s+)?(?P<v>{_LANGS_EN})"
    rf"(?:,?\s+(?:{LASTING_EN}|please|again|now))*"
    rf"|(?P<v2>{_LANGS_EN})\s+(?:only\s+)?(?:from now on|going forward|from here on)"
    r"(?:,?\s*please)?"
)
AVOID_EN = (  # "don't answer in Korean", "never reply to me in Japanese again"
    r"(?:please\s+)?(?:don'?t|do not|never|stop)\s+(?:answer|repl(?:y|ying)|respond|speak|write"
    r"|talk|us(?:e|ing)|answering|responding|speaking|writing|talking)"
    rf"(?:\s+(?:to|with)\s+me)?\s+(?:in\s+)?(?P<v>{_LANGS_EN})"
    r"(?:\s+(?:anymore|any more|again|please))*"
)
_STYLES_EN = (
    r"short|shorter|brief|briefer|briefly|concise|concisely|succinct|succinctly|simple|simply"
    r"|detailed|in detail|long|longer"
)
STYLE_EN = (  # "from now on keep answers short", "Please be more concise from now on"
    rf"(?=.*\b{LASTING_EN}\b){_FROM_NOW_EN}(?:please\s+)?(?:(?:always|just)\s+)?"
    r"(?:keep\s+(?:your\s+|the\s+|all\s+|it\s+)?(?:(?:answers?|repl(?:y|ies)|responses?)\s+)?"
    r"(?:to\s+me\s+)?|(?:be|answer|reply|respond|write)\s+(?:(?:a\s+bit\s+)?more\s+)?"
    r"|give\s+(?:me\s+)?(?:more\s+)?|(?=(?:" + _STYLES_EN + r")\s+(?:answers|replies|responses)))"
    rf"(?P<v>{_STYLES_EN})(?:\s+(?:answers|replies|responses))?(?:,?\s+(?:{LASTING_EN}|please))*"
)
_TONES_EN = (
    r"formal|formally|informal|informally|casual|casually|polite|politely|friendly|professional"
    r"|professionally|relaxed"
)
TONE_EN = (  # "from now on be more formal", "please be casual with me from now on"
    rf"(?=.*\b{LASTING_EN}\b){_FROM_NOW_EN}(?:please\s+)?(?:(?:always|just)\s+)?"
    r"(?:be|talk|speak|write|answer|reply|respond|sound)\s+"
    r"(?P<d>(?:(?:a\s+bit|a\s+little|much)\s+)?(?:more|less)\s+)?"
    rf"(?P<v>{_TONES_EN})(?:\s+(?:with|to)\s+me)?(?:\s+(?:{LASTING_EN}|please))*"
)
_EMOJI_EN = r"emojis?|emoticons?|emoji"
EMOJI_EN = (  # "don't use emoji", "no emojis please", "Stop using emojis in your replies"
    rf"{_FROM_NOW_EN}(?:please\s+)?(?:(?:don'?t|do not|never|stop)\s+(?:use|using|add|adding|put"
    r"|putting|send|sending|include|including)\s+(?:any\s+)?|no\s+(?:more\s+)?"
    r"|(?:stop|enough)\s+with\s+(?:all\s+)?(?:the\s+|those\s+|these\s+)?)"
    rf"(?P<v>{_EMOJI_EN})(?:,?\s+(?:anymore|any more|again|please|{LASTING_EN}"
    r"|in\s+(?:your\s+)?(?:answers|replies|responses|messages)))*"
)
EMOJI_MORE_EN = (  # "from now on, use more emoji"
    rf"(?=.*\b{LASTING_EN}\b){_FROM_NOW_EN}(?:please\s+)?(?:use|add|include)\s+more\s+"
    rf"(?P<v>{_EMOJI_EN})(?:\s+(?:{LASTING_EN}|please))*"
)


# --- what each one says ------------------------------------------------------------------


def reply_en(values: Values, whole: str) -> str:
    return f"wants answers in {values['v'].capitalize()}"


def answer_en(values: Values, whole: str) -> str:
    return f"answer in {values['v'].capitalize()}"


def avoid_en(values: Values, whole: str) -> str:
    return f"do not answer in {values['v'].capitalize()}"


def emoji_zh(values: Values, whole: str) -> str:
    """ "别用 emoji" → "不要用emoji"; "以后少用点表情" → "少用表情"."""
    verb = "少用" if values["neg"].endswith("少") else "不要用"
    return verb + values["v"]


_STYLE_WORDS = {"shorter": "short", "briefer": "brief", "briefly": "brief", "concisely": "concise"}
_STYLE_WORDS |= {"succinctly": "succinct", "simply": "simple", "in detail": "detailed"}
_STYLE_WORDS |= {"longer": "long"}


def style_en(values: Values, whole: str) -> str:
    """ "Please be more concise from now on" → "keep answers concise"."""
    word = " ".join(values["v"].lower().split())
    return f"keep answers {_STYLE_WORDS.get(word, word)}"


def tone_en(values: Values, whole: str) -> str:
    """ "from now on be more formal" → "be more formal"; "be casual with me" → "be casual"."""
    word = values["v"].lower()
    word = word.removesuffix("ly") if word != "friendly" else word
    degree = values["d"].lower().split()[-1:] if values["d"] else []
    return " ".join(["be", *degree, word])


def emoji_en(values: Values, whole: str) -> str:
    return "do not use emoji"


def more_emoji_en(values: Values, whole: str) -> str:
    return "use more emoji"
