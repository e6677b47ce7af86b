"""Is a message addressed to the bot? Finds out, and strips what only served to address it.

A message is `to_me` when it is private; when an `at` of the bot is its first or last segment;
when it replies to one of the bot's messages; or when it starts with one of the bot's nicknames.
What is removed (as nonebot does, so the model sees the words, not the addressing):

- the `reply` segment (its id becomes `reply_to`), and the `at` of the replied-to user that the QQ
  client inserts right after it, with the space that follows;
- the bot's `at` at the start or the end;
- a leading nickname followed by a separator (`纳西妲，…`, `nahida: …`).

Who sent the replied-to message comes from `reply_sender` (the adapter first checks the ids of
messages it sent, then asks `get_msg`); when that fails the message is still handled, and an `at`
of the bot right after the reply still makes it `to_me` through the first-segment rule.
`mentions` lists every user the message mentions (the bot included, the client's reply `at` not).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from nahida.adapters.onebot.events import MessageEvent, id_of
from nahida.adapters.onebot.message import MessageSegment, plain_text

ReplySender = Callable[[str], Awaitable[str | None]]
_SEPARATORS = r"[\s,，.。:：!！?？、~～]"


@dataclass(frozen=True, slots=True)
class Addressing:
    segments: tuple[MessageSegment, ...]
    text: str
    to_me: bool
    reply_to: str | None
    mentions: tuple[str, ...]


def _is_at(seg: MessageSegment, user_id: str) -> bool:
    return seg.type == "at" and id_of(seg.data.get("qq")) == user_id


def _strip_text(segs: list[MessageSegment], index: int, *, left: bool) -> None:
    """Strip whitespace off the text segment at `index`, removing it when nothing is left."""
    if not 0 <= index < len(segs) or segs[index].type != "text":
        return
    text = segs[index].get("text")
    text = text.lstrip() if left else text.rstrip()
    if text:
        segs[index] = MessageSegment.text(text)
    else:
        del segs[index]


def nickname_pattern(nicknames: Sequence[str]) -> re.Pattern[str] | None:
    names = sorted((n for n in nicknames if n), key=len, reverse=True)
    if not names:
        return None
    alternatives = "|".join(re.escape(n) for n in names)
    return re.compile(rf"^\s*(?:{alternatives})(?P<sep>{_SEPARATORS}+|$)?", re.IGNORECASE)


async def address(
    event: MessageEvent,
    *,
    nicknames: re.Pattern[str] | None,
    reply_sender: ReplySender,
    bot_name: str = "",
) -> Addressing:
    self_id = event.self_id
    segs = list(event.message)
    to_me = not event.is_group
    reply_to = None
    index = next((i for i, s in enumerate(segs) if s.type == "reply"), None)
    if index is not None:
        reply_to = id_of(segs[index].data.get("id"))
        del segs[index]
        replied = await reply_sender(reply_to) if reply_to is not None else None
        if replied is not None:
            to_me = to_me or replied == self_id
            if index < len(segs) and _is_at(segs[index], replied):
                del segs[index]  # the QQ client's automatic @ of the replied-to user
        _strip_text(segs, index, left=True)
    mentions = tuple(q for s in segs if s.type == "at" and (q := id_of(s.data.get("qq"))))
    if segs and _is_at(segs[0], self_id):
        to_me = True
        del segs[0]
        _strip_text(segs, 0, left=True)
    _strip_text(segs, len(segs) - 1, left=False)
    if segs and _is_at(segs[-1], self_id):
        to_me = True
        del segs[-1]
        _strip_text(segs, len(segs) - 1, left=False)
    if nicknames is not None and segs and segs[0].type == "text":
        match = nicknames.match(segs[0].get("text"))
        if match is not None:
            to_me = True
            if (
                match.group("sep") is not None
            ):  # "纳西妲，你好" loses the name, "纳西妲是谁" keeps it
                segs[0] = MessageSegment.text(segs[0].get("text")[match.end() :])
                _strip_text(segs, 0, left=True)
    named = [
        MessageSegment("at", {**s.data, "name": bot_name})
        if bot_name and _is_at(s, self_id) and not s.get("name")
        else s
        for s in segs
    ]
    return Addressing(tuple(named), plain_text(named), to_me, reply_to, mentions)
