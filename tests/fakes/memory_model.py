"""How the fake LLM servers answer the memory's own requests (DESIGN §7): the compress model's
summary, roll and episode requests are recognised by their system prompt and answered from their
input, deterministically, so a test can tell what each answer was made of; chat requests are left
to the server's script.

- summary: `摘要：` + the new turns' texts joined by `；` (after the summary so far, if any).
- roll: every summary clause with 记住 or 重要 becomes an explicit fact, every `喜欢…` clause a
  preference fact and a 工作与沟通方式 profile bullet; the summary becomes `（滚动）` + its tail.
- episode: `上次聊了：` + the first user texts; keywords: the first words of them.
- dream (unless the server's `dream_script` says otherwise): every person's turn with 喜欢 becomes
  an `add` of a preference in their own scope, every turn with 记住 an `add` of a fact in the
  first scope offered (the chat's), each citing its turn; nothing else.
"""

from __future__ import annotations

import json
import re
from typing import Any

SUMMARY = "You keep the running summary"
ROLL = "You consolidate an assistant's working memory"
EPISODE = "A conversation has ended."
DREAM = "You consolidate the long-term memory"
KINDS = {SUMMARY: "summary", ROLL: "roll", EPISODE: "episode", DREAM: "dream"}
DREAM_TURN = re.compile(r"^(t\d+) \[[^\]]+\] (?:(?!assistant:)[^<\n]*<(user:[^>]+)>): (.*)$", re.M)
_LINE = re.compile(r"^\[\d\d-\d\d \d\d:\d\d\] ([^:]+): (.*)$", re.M)


def memory_task(body: dict[str, Any]) -> str | None:
    """ "summary", "roll" or "episode" for a memory request, None for a chat request."""
    system = _system(body)
    for prefix, kind in KINDS.items():
        if system.startswith(prefix):
            return kind
    return None


def answer(body: dict[str, Any]) -> str | None:
    """The memory request's answer, or None for a chat request."""
    task = memory_task(body)
    if task is None:
        return None
    text = _user(body)
    if task == "dream":
        return dream_answer(text)
    said = [m.group(2) for m in _LINE.finditer(text) if m.group(1) != "assistant"]
    if task == "summary":
        before = text.split("Summary so far:\n", 1)[-1].split("\n\nNew turns:", 1)[0]
        head = "" if before.startswith("(none yet)") else before.strip() + "；"
        return f"{head}摘要：" + "；".join(said)
    if task == "roll":
        summary = text.split("Summary:\n", 1)[-1]
        clauses = [c for c in re.split(r"[；;。\n]", summary) if c.strip()]
        facts = [
            {"content": c.strip(), "kind": "fact", "explicit": True}
            for c in clauses
            if "记住" in c or "重要" in c
        ]
        likes = [c.strip() for c in clauses if "喜欢" in c and "记住" not in c]
        facts += [{"content": c, "kind": "preference"} for c in likes]
        profile = [{"section": "工作与沟通方式", "text": c} for c in likes]
        rolled = "（滚动）" + summary[-120:]
        return json.dumps(
            {"facts": facts, "profile": profile, "summary": rolled}, ensure_ascii=False
        )
    words = [w for s in said for w in re.split(r"[\s，,。！？?!]+", s) if w][:4]
    return json.dumps(
        {"summary": "上次聊了：" + "；".join(said[:3]), "keywords": words}, ensure_ascii=False
    )


def dream_answer(text: str) -> str:
    scopes = text.split("Scopes you may write: ", 1)[-1].split("\n", 1)[0].split(" · ")
    ops = []
    for label, person, said in DREAM_TURN.findall(text):
        if "喜欢" in said:
            ops.append(dream_op("preference", said, person, [label]))
        if "记住" in said:
            ops.append(dream_op("fact", said, scopes[0], [label]))
    return json.dumps({"ops": ops}, ensure_ascii=False)


def dream_op(
    kind: str, content: str, scope: str, evidence: list[str], *, op: str = "add", **more: Any
) -> dict[str, Any]:
    """One op of a dream answer, as a test scripts it."""
    return {
        "op": op,
        "kind": kind,
        "content": content,
        "scope": scope,
        "evidence": evidence,
        "confidence": 0.9,
        "reason": "said so",
        **more,
    }


def _system(body: dict[str, Any]) -> str:
    system = body.get("system")  # Anthropic
    if isinstance(system, list):
        return "".join(b.get("text", "") for b in system)
    if isinstance(system, str):
        return system
    for message in body.get("messages", []):
        if message.get("role") == "system":
            return _text(message.get("content"))
    return ""


def _user(body: dict[str, Any]) -> str:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return _text(users[-1].get("content")) if users else ""


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return str(content or "")
