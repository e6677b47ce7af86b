"""An example plugin: `/memo <text>` keeps a note in memory, `/memo find <words>` finds it.

It shows both memory permissions (`memory.write` for `memory_store`, `memory.read` for
`memory_search`) and how a plugin names its target: the chat and the person come from the
message being handled (`call.chat`, `call.user`). A note in a private chat is about the person
(user memory, private); a note in a group belongs to the group (chat memory). Notes are ordinary
memory items with source `plugin:memo`: `/memory why`, `/memory forget` and review apply to them.
"""

from __future__ import annotations

from nahida.plugins import PluginCall, PluginContext, SecretRefused

TEXTS = {
    "usage": {
        "zh": "用法：/memo <内容> 记一条备忘；/memo find <关键词> 查找备忘",
        "en": "Usage: /memo <text> to keep a note; /memo find <words> to look for one",
    },
    "saved": {"zh": "备忘已记下（{id}）。", "en": "Noted ({id})."},
    "merged": {"zh": "这条备忘已经有了（{id}）。", "en": "Already noted ({id})."},
    "pending": {"zh": "备忘已提交，等待审核（{id}）。", "en": "Note submitted for review ({id})."},
    "refused": {
        "zh": "备忘里像是有密钥或密码，没有保存。",
        "en": "The note seems to contain a key or password; nothing was saved.",
    },
    "none": {"zh": "没有找到相关的备忘。", "en": "No matching notes."},
}


def say(call: PluginCall, key: str, **values: object) -> str:
    return TEXTS[key][call.language].format(**values)


def setup(ctx: PluginContext) -> None:
    async def memo(call: PluginCall) -> str:
        verb, _, rest = call.args.strip().partition(" ")
        if not verb:
            return say(call, "usage")
        if verb.lower() == "find":
            return await find(call, rest.strip())
        return await note(call, call.args.strip())

    async def note(call: PluginCall, text: str) -> str:
        try:
            result = await ctx.memory_store(
                text,
                audience="chat" if call.chat.is_group else "user",
                subject=None if call.chat.is_group else call.user,
                speaker=call.user,
                chat=call.chat,
                evidence=[call.evidence()],
            )
        except SecretRefused:
            return say(call, "refused")
        if result.outcome == "pending":
            return say(call, "pending", id=result.candidate_id)
        if result.outcome == "merged":
            return say(call, "merged", id=result.item_id)
        if result.item_id is None:
            return say(call, "usage")
        return say(call, "saved", id=result.item_id)

    async def find(call: PluginCall, words: str) -> str:
        if not words:
            return say(call, "usage")
        hits = await ctx.memory_search(words, 5, chat=call.chat, user=call.user)
        notes = [h for h in hits if h.item is not None and h.item.source == ctx.source]
        if not notes:
            return say(call, "none")
        return "\n".join(f"{h.id} · {h.text}" for h in notes)

    ctx.register_command(
        "memo",
        memo,
        help={"zh": "备忘：/memo <内容>，/memo find <关键词>", "en": TEXTS["usage"]["en"]},
    )
