"""`to_me`, the reply target, mentions and the text the model sees."""

from __future__ import annotations

from typing import Any

from nahida.adapters.onebot.addressing import Addressing, address, nickname_pattern
from nahida.adapters.onebot.events import MessageEvent, parse_event

BOT = "10001"
NICKS = nickname_pattern(["nahida", "纳西妲"])


def event(message: Any, *, group: bool = True) -> MessageEvent:
    data: dict[str, Any] = {
        "time": 1,
        "self_id": int(BOT),
        "post_type": "message",
        "message_type": "group" if group else "private",
        "message_id": 7,
        "user_id": 30001,
        "message": message,
    }
    if group:
        data["group_id"] = 20001
    parsed = parse_event(data)
    assert isinstance(parsed, MessageEvent)
    return parsed


async def run(
    message: Any, *, group: bool = True, senders: dict[str, str | None] | None = None
) -> Addressing:
    asked: list[str] = []

    async def reply_sender(message_id: str) -> str | None:
        asked.append(message_id)
        return (senders or {}).get(message_id)

    return await address(event(message, group=group), nicknames=NICKS, reply_sender=reply_sender)


async def test_private_is_always_to_me() -> None:
    found = await run("hello", group=False)
    assert found.to_me and found.text == "hello"


async def test_plain_group_message_is_not_to_me() -> None:
    found = await run("hello everyone")
    assert not found.to_me and found.reply_to is None and found.mentions == ()


async def test_at_first_or_last_is_to_me_and_removed() -> None:
    first = await run(f"[CQ:at,qq={BOT}]  在吗")
    last = await run(f"在吗 [CQ:at,qq={BOT}] ")
    assert first.to_me and first.text == "在吗"
    assert last.to_me and last.text == "在吗"
    assert [s.type for s in first.segments] == ["text"]
    assert first.mentions == (BOT,)


async def test_at_in_the_middle_or_of_someone_else_is_not_to_me() -> None:
    middle = await run(f"问问 [CQ:at,qq={BOT}] 好吗")
    other = await run("[CQ:at,qq=30002] 你好")
    assert not middle.to_me and middle.text == "问问 @10001 好吗"
    assert not other.to_me and other.text == "@30002 你好"
    assert other.mentions == ("30002",)


async def test_reply_to_the_bot_is_to_me_and_client_at_is_stripped() -> None:
    found = await run(f"[CQ:reply,id=-55][CQ:at,qq={BOT}] 再说一遍", senders={"-55": BOT})
    assert found.to_me
    assert found.reply_to == "-55"
    assert found.text == "再说一遍"
    assert found.mentions == ()  # the client's automatic @ is no mention
    assert [s.type for s in found.segments] == ["text"]


async def test_reply_to_someone_else_strips_their_automatic_at_only() -> None:
    found = await run("[CQ:reply,id=9][CQ:at,qq=30002] 同意", senders={"9": "30002"})
    assert not found.to_me
    assert found.reply_to == "9" and found.text == "同意" and found.mentions == ()
    typed = await run("[CQ:reply,id=9][CQ:at,qq=30003] 你看", senders={"9": "30002"})
    assert typed.mentions == ("30003",) and typed.text == "@30003 你看"


async def test_failed_lookup_still_handles_the_message() -> None:
    # get_msg failed (None): the @ of the bot after the reply still addresses it
    found = await run(f"[CQ:reply,id=9][CQ:at,qq={BOT}] 这个呢", senders={})
    assert found.to_me and found.reply_to == "9" and found.text == "这个呢"
    plain = await run("[CQ:reply,id=9]这个呢", senders={})
    assert not plain.to_me and plain.reply_to == "9" and plain.text == "这个呢"


async def test_nickname_prefix() -> None:
    comma = await run("纳西妲，今天吃什么")
    space = await run("Nahida  help")
    glued = await run("纳西妲是谁")
    alone = await run("nahida")
    inside = await run("我喜欢纳西妲")
    assert comma.to_me and comma.text == "今天吃什么"
    assert space.to_me and space.text == "help"
    assert glued.to_me and glued.text == "纳西妲是谁"  # no separator: the name is part of it
    assert alone.to_me and alone.text == ""
    assert not inside.to_me


async def test_array_message_with_numeric_qq() -> None:
    found = await run(
        [{"type": "at", "data": {"qq": int(BOT)}}, {"type": "text", "data": {"text": " hi"}}]
    )
    assert found.to_me and found.text == "hi"
