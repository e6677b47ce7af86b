"""OneBot v11 messages: CQ codes, segment arrays, and the mapping to and from `Segment`.

A OneBot message arrives either as an array of `{"type": ..., "data": {...}}` segments or as one
CQ-code string (`hello [CQ:at,qq=123] [CQ:face,id=14]`), depending on the implementation's
setting; `parse_message` accepts both and returns `MessageSegment`s. CQ escaping (exact, as the
spec and go-cqhttp do it): in text `&`→`&amp;`, `[`→`&#91;`, `]`→`&#93;`; in parameter values also
`,`→`&#44;`; unescaping replaces `&amp;` last, so `&amp;#91;` stays the literal `&#91;`. A parameter
splits on its first `=` only. Unknown segment types are kept untouched, both ways.

`to_segments` turns OneBot segments into `Segment`s (text, mention, reply, image, other — other
keeps the OneBot type and data so nothing is lost) and `from_reply` builds the array we send.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nahida.envelope import Reply, Segment

_CQ_CODE = re.compile(
    r"\[CQ:(?P<type>[a-zA-Z0-9_.\-]+)(?P<params>(?:,[a-zA-Z0-9_.\-]+=[^,\]]*)*),?\]"
)
_NAME = re.compile(r"[a-zA-Z0-9_.\-]+")  # a code's type, a parameter's key
_PARAM = re.compile(r"[a-zA-Z0-9_.\-]+=")


@dataclass(frozen=True, slots=True)
class MessageSegment:
    """One OneBot segment. `data` values are usually strings, but arrays may carry numbers."""

    type: str
    data: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def text(cls, text: str) -> MessageSegment:
        return cls("text", {"text": text})

    @classmethod
    def at(cls, qq: str) -> MessageSegment:
        return cls("at", {"qq": qq})

    @classmethod
    def reply(cls, message_id: str) -> MessageSegment:
        return cls("reply", {"id": message_id})

    def get(self, key: str) -> str:
        """A data value as a string ('' when missing), whatever type it arrived as."""
        value = self.data.get(key)
        return "" if value is None else str(value)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "data": dict(self.data)}


def escape(text: str, *, comma: bool) -> str:
    """CQ escaping: `comma=False` for text, `comma=True` for parameter values."""
    text = text.replace("&", "&amp;").replace("[", "&#91;").replace("]", "&#93;")
    return text.replace(",", "&#44;") if comma else text


def unescape(text: str) -> str:
    return (
        text.replace("&#44;", ",").replace("&#91;", "[").replace("&#93;", "]").replace("&amp;", "&")
    )


def parse_cq(text: str) -> list[MessageSegment]:
    """Parse a CQ-code string; text between codes becomes text segments (empty ones dropped).

    A code is `[CQ:type,key=value,...]` with an optional comma before the `]`; a `[CQ:` that does
    not open one is text. Values hold no `,` or `]`, so a code ends at the first `]` after its
    `[CQ:`: each stretch of text up to a `]` is searched once (`_code_in`), and a text full of
    codes that never close costs no more than its length. (A regular expression tried at every
    `[CQ:` reads on to the end of the text each time it fails: minutes for 200 kB.)"""
    if "[CQ:" not in text:
        return [MessageSegment.text(unescape(text))] if text else []
    segments: list[MessageSegment] = []
    start = 0  # where the text not yet taken begins
    stretch = 0  # where the stretch before the next `]` begins
    while (close := text.find("]", stretch)) != -1:
        found = _code_in(text, stretch, close)
        if found is not None:
            at, code = found
            if at > start:
                segments.append(MessageSegment.text(unescape(text[start:at])))
            segments.append(code)
            start = close + 1
        stretch = close + 1
    if start < len(text):
        segments.append(MessageSegment.text(unescape(text[start:])))
    return segments


def _code_in(text: str, begin: int, close: int) -> tuple[int, MessageSegment] | None:
    """The first code that ends at `close` (the first `]` after `begin`), and where it starts.

    Split on commas, the stretch from its first `[CQ:` is `[CQ:type`, then `key=value` pieces,
    then perhaps an empty piece (the optional comma). Only a `[CQ:` after which every piece is a
    parameter can open the code, and in its piece it must be the last `[CQ:` (a type has no `[`):
    so the pieces are checked from the end, once."""
    first = text.find("[CQ:", begin, close)
    if first == -1:
        return None
    match = _CQ_CODE.fullmatch(text, first, close + 1)
    if match is not None:  # the usual case: the stretch's first `[CQ:` opens the code
        params = match.group("params").split(",")[1:]
        return first, MessageSegment(match.group("type"), _params(params))
    pieces = text[first:close].split(",")
    last = len(pieces) - 1
    if last > 0 and not pieces[last]:
        last -= 1  # the comma allowed before `]`
    head = last  # the type is in `pieces[head]` or later: everything after it are parameters
    while head > 0 and _PARAM.match(pieces[head]):
        head -= 1
    offset = first + sum(len(p) + 1 for p in pieces[:head])
    for index in range(head, last + 1):
        piece = pieces[index]
        at = piece.rfind("[CQ:")
        if at != -1 and _NAME.fullmatch(piece, at + 4):
            return offset + at, MessageSegment(
                piece[at + 4 :], _params(pieces[index + 1 : last + 1])
            )
        offset += len(piece) + 1
    return None


def _params(pieces: list[str]) -> dict[str, Any]:
    """`key=value` pieces as data; a key splits on its first `=` only."""
    data: dict[str, Any] = {}
    for piece in pieces:
        key, _, value = piece.partition("=")
        data[key] = unescape(value)
    return data


def to_cq(segments: Iterable[MessageSegment]) -> str:
    """Render segments as a CQ-code string; `parse_cq(to_cq(s))` gives `s` back (merged text)."""
    parts = []
    for seg in segments:
        if seg.type == "text":
            parts.append(escape(seg.get("text"), comma=False))
            continue
        params = "".join(
            f",{key}={escape(str(value), comma=True)}"
            for key, value in seg.data.items()
            if value is not None
        )
        parts.append(f"[CQ:{seg.type}{params}]")
    return "".join(parts)


def merge_text(segments: Iterable[MessageSegment]) -> list[MessageSegment]:
    """Join adjacent text segments and drop empty ones (what a CQ round trip does)."""
    merged: list[MessageSegment] = []
    for seg in segments:
        if seg.type == "text":
            if not seg.get("text"):
                continue
            if merged and merged[-1].type == "text":
                merged[-1] = MessageSegment.text(merged[-1].get("text") + seg.get("text"))
                continue
        merged.append(seg)
    return merged


class MessageFormatError(ValueError):
    """The `message` field is neither a CQ string nor an array of segments."""


def parse_message(message: Any) -> list[MessageSegment]:
    """A `message` field as segments: a CQ string, an array, or a single segment object."""
    if isinstance(message, str):
        return parse_cq(message)
    if isinstance(message, dict):
        message = [message]
    if not isinstance(message, list):
        raise MessageFormatError(f"message is a {type(message).__name__}, not a string or array")
    segments = []
    for item in message:
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            raise MessageFormatError(f"a message segment must be an object with a type: {item!r}")
        data = item.get("data")
        segments.append(MessageSegment(item["type"], dict(data) if isinstance(data, dict) else {}))
    return segments


# What a non-text segment contributes to the plain text the model sees.
_PLACEHOLDERS = {"image": "[image]"}


def mention_text(seg: MessageSegment) -> str:
    qq = seg.get("qq")
    if qq == "all":
        return "@all"
    return "@" + (seg.get("name") or qq)


def plain_text(segments: Sequence[MessageSegment]) -> str:
    """The text a reader sees: text, `@name` for mentions, `[image]` for images; stripped."""
    parts = []
    for seg in segments:
        if seg.type == "text":
            parts.append(seg.get("text"))
        elif seg.type == "at":
            parts.append(mention_text(seg))
        else:
            parts.append(_PLACEHOLDERS.get(seg.type, ""))
    return "".join(parts).strip()


def to_segment(seg: MessageSegment) -> Segment:
    if seg.type == "text":
        return Segment("text", seg.get("text"))
    if seg.type == "at":
        return Segment("mention", mention_text(seg), dict(seg.data))
    if seg.type == "reply":
        return Segment("reply", "", dict(seg.data))
    if seg.type == "image":
        return Segment("image", "", dict(seg.data))
    return Segment("other", "", {"type": seg.type, "data": dict(seg.data)})


def to_segments(segments: Iterable[MessageSegment]) -> tuple[Segment, ...]:
    return tuple(to_segment(s) for s in segments)


def from_segment(seg: Segment) -> MessageSegment:
    if seg.type == "text":
        return MessageSegment.text(seg.text)
    if seg.type == "mention":
        return MessageSegment("at", dict(seg.data))
    if seg.type in ("reply", "image"):
        return MessageSegment(seg.type, dict(seg.data))
    kind = seg.data.get("type")
    data = seg.data.get("data")
    if isinstance(kind, str) and isinstance(data, dict):
        return MessageSegment(kind, dict(data))
    return MessageSegment.text(seg.text)  # a foreign "other" segment: send what text it has


def from_reply(reply: Reply) -> list[dict[str, Any]]:
    """The segment array for a reply: quote first, then the mention, then the content."""
    out = []
    if reply.quote is not None:
        out.append(MessageSegment.reply(reply.quote))
    if reply.mention is not None and reply.chat.is_group:
        out.extend((MessageSegment.at(reply.mention.id), MessageSegment.text(" ")))
    out.extend(from_segment(s) for s in reply.segments)
    return [s.to_json() for s in merge_text(out)]
