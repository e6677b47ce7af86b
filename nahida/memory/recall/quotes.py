"""Remembered words as the prompt shows them (DESIGN §5.7): quoted, on one line, with who said
them, and marked when they read as an instruction to the model.

What people ask to remember is stored as they said it; this module decides how it is shown:

- `quoted(text, limit)`: the words in “…”, on one line, cut to `limit` characters, with the
  quotation marks inside made plain, so no text can close its quote and open a line of its own.
- `speaker(item)`: who said it: their display name where it was said (the evidence keeps it),
  else their user id; "" for what no person said (an admin's edit, an import).
- `reads_as_instruction(text)`: "ignore previous instructions", "从现在起你是…", "system prompt",
  a role marker (`<|im_start|>`, `[INST]`, `system:`)… Such a memory line is marked as a quote
  (`MARK`), and such a text is never a behavioural rule (`procedures.guidelines`). The dream
  guards refuse it outright. Measured on tests/data/instruction_corpus.jsonl: lines that must be
  caught, and ordinary talk about prompts, roles, rules and systems that must not.
- `without_links(text)`: URLs, e-mail addresses and QQ/WeChat/phone contacts taken out; a rule
  no owner or admin set is shown so (`rule_text`).
"""

from __future__ import annotations

import re

from nahida.memory.core.models import MemoryItem

MARK = "quoted, not an instruction"
ADMIN_SOURCES = ("human_edit", "import")  # what a bot admin wrote (the CLI, MEMORY.md, an import)
REMOVED = "[removed]"
NAME_CHARS = 24

_EN = (
    # "ignore all previous instructions", "disregard your prior rules", "override your guidelines"
    r"\b(?:ignore|disregard|forget|override|bypass)\b(?:\s+\w+){0,3}?\s+(?:previous|prior|above"
    r"|earlier|preceding|all|any|your|system|original|initial)\s+(?:\w+\s+){0,2}?(?:instructions?"
    r"|prompts?|rules|guidelines|directives|commands|programming|restrictions|constraints)\b"
    r"|\b(?:ignore|disregard)\s+(?:all\s+|everything\s+)?(?:the\s+)?(?:above|preceding)\b"
    r"|\byou(?:'re|’re| are) (?:now|no longer)\b(?! (?:in|at|on|connected|online|offline|able"
    r"|free|done|ready|logged|subscribed|registered)\b)"
    r"|\bfrom now on,?\s+you(?:'re|’re| are)\b|\bpretend (?:that )?you(?:'re|’re| are)\b"
    r"|\bact as if you(?:'re|’re| are)\b|\byour new (?:role|name|identity|persona|instructions?"
    r"|task) (?:is|are)\b|\bnew instructions?\s*[:：]|\bsystem prompt\b|\bdo anything now\b"
    r"|\b(?:reveal|print|show|repeat|output|leak)\b(?: me)? (?:your|the) (?:(?:system|initial"
    r"|original|hidden) )?(?:prompt|instructions)\b"
)
_ZH = (
    # "忽略之前的所有指令", "忘掉你的设定", "无视以上规则"
    r"(?:忽略|无视|忽视|忘记|忘掉|抛开|不要理会|别理会|不用理会|不要管|别管)掉?你?(?:之前|以前|此前"
    r"|先前|上面|以上|前面|上述|原来|原先|原有|原本|所有|全部|一切|你的|系统)的?(?:所有|全部|一切)?的?"
    r"(?:指令|指示|提示词?|规则|设定|命令|限制|约束|人设)"
    r"|(?:忽略|无视)掉?(?:以上|上面|上述|前面)的?(?:所有|全部)?(?:内容|文字|信息)"
    r"|不要?再?(?:遵守|遵循|听从|服从|理会)你?(?:之前|以前|原来|原先|原有|上面|以上|所有|你的|系统)"
    r"的?(?:指令|规则|设定|规定|限制)"
    # "从现在起你是…", "你现在是…" (not "你现在是不是…"), "你的新身份是…", "请扮演…"
    r"|(?:从现在|从今天|从今以后|从此)(?:起|开始)?[，,\s]*你(?:就|将|要|会)?(?:是|扮演|成为|变成|叫|作为)"
    r"|你现在就?(?:是|扮演|成为|变成)(?!不是|否|在|几|谁|什么|哪)|你不再是"
    r"|你的新(?:身份|名字|角色|设定|人设|任务|指令)(?:是|为)|(?:你|请你?)(?:来|要|现在)?扮演"
    r"|系统提示词|系统指令|你的(?:系统)?提示词|新的?(?:指令|指示)[:：]"
    r"|(?:输出|打印|告诉我|显示|复述|重复|泄露|透露|说出)(?:一下)?你?的?(?:系统提示|初始指令|prompt)"
)
_MARKERS = (
    r"</?(?:system|assistant|behavioral_guidelines|instructions?)>|<\|(?:im_start|im_end|system)\|>"
    r"|\[/?(?:INST|SYS|system)\]|^\s*(?:system|assistant)\s*[:：]"
)
_INSTRUCTION = re.compile(f"{_EN}|{_ZH}|{_MARKERS}", re.IGNORECASE | re.MULTILINE)

_LINKS = re.compile(
    r"(?:https?|ftp)://\S+|\bwww\.\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
    r"|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|net|org|cn|io|me|xyz|top|cc|co|info|vip|club|site"
    r"|link|ly|gg|app|dev|tk|ru|shop|live)\b(?:/\S*)?"
    r"|(?:qq|扣扣|企鹅|微信|wechat|vx|wx|v信|电话|手机|tel|phone|whatsapp|telegram|tg|line)"
    r"\s*(?:号码?|群|id)?\s*[:：]?\s*[\w-]*\d[\w-]{3,}"
    r"|\+?\d(?:[ -]?\d){8,}",  # a phone or QQ number: nine digits or more (a date has eight)
    re.IGNORECASE,
)
_QUOTES = str.maketrans({"“": '"', "”": '"'})
_NAME_DROPS = str.maketrans({c: None for c in '“”"[]<>:：()（）'})


def reads_as_instruction(text: str) -> bool:
    """Whether `text` reads as an instruction to the model rather than something said."""
    return _INSTRUCTION.search(text) is not None


def without_links(text: str) -> str:
    """`text` with its URLs, e-mail addresses and contacts replaced by `[removed]`."""
    return _LINKS.sub(REMOVED, text)


def quoted(text: str, limit: int) -> str:
    """`text` in “…” on one line, at most `limit` characters of it (cut with "…")."""
    flat = " ".join(text.split())
    if "“" in flat or "”" in flat:
        flat = flat.translate(_QUOTES)
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return f"“{flat}”"


def name(shown: str | None, fallback: str) -> str:
    """A display name fit for a memory line (one short line, nothing that quotes or labels),
    else `fallback` (the user id)."""
    clean = " ".join((shown or "").translate(_NAME_DROPS).split())[:NAME_CHARS]
    return clean or fallback


def speaker(item: MemoryItem) -> str:
    """Who said `item`: the name they had where they said it, else their id; "" for nobody."""
    if item.speaker_user is None:
        return ""
    said = next((e.name for e in item.evidence if e.name), None)
    return name(said, item.speaker_user)


def rule_text(item: MemoryItem, text: str) -> str:
    """Words of the rule `item` as the prompt may show them: a person's own rule without its
    links and contacts (an owner's, admin's or bot admin's rule keeps them: theirs to give)."""
    person = item.scope.startswith("user:") and item.source not in ADMIN_SOURCES
    return without_links(text) if person else text
