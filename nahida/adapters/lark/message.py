"""Lark message content ↔ Nahida segments, both ways.

Inbound, `content` is a JSON string whose shape depends on `message_type`: `text` carries
`{"text": "@_user_1 hi"}` with `@_user_N` placeholders resolved through the event's `mentions`;
`post` (rich text) carries `{"title": ..., "content": [[element, ...], ...]}` (sometimes wrapped in
a locale key) and is flattened to text, with images kept as segments. The bot's own mention is
left out of the text the model sees; other mentions read `@Name`.

Outbound, a reply is plain `text` unless it is Markdown whose structure plain text would lose
(code blocks, headings, bold, links, tables, quotes): then it is a `post` of `md` rows, one per
fenced code block (the layout lark-oapi's own channel sender uses). Long replies are split into
chunks, closing and reopening a code fence that a cut falls inside.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nahida.envelope import Reply, Segment

CHUNK_CHARS = 3000  # lark-oapi's channel sender uses 2000–3500; requests may be up to 150 KB
POST_LOCALE = "zh_cn"
_ALL = "@_all"
_PLACEHOLDERS = {
    "image": "[image]",
    "file": "[file]",
    "audio": "[audio]",
    "media": "[video]",
    "sticker": "[sticker]",
    "interactive": "[card]",
    "share_chat": "[shared chat]",
    "share_user": "[shared contact]",
    "merge_forward": "[forwarded messages]",
}


@dataclass(frozen=True, slots=True)
class Mention:
    key: str  # the placeholder in the text, e.g. "@_user_1"
    open_id: str
    name: str


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One message to send: a `msg_type` and its `content` as the JSON string the API wants."""

    msg_type: str
    content: str

    @classmethod
    def of(cls, msg_type: str, content: dict[str, Any]) -> Outgoing:
        return cls(msg_type, json.dumps(content, ensure_ascii=False))


# -- inbound -------------------------------------------------------------------------------------


class _Builder:
    """Collects segments and, in parallel, the text the model sees."""

    def __init__(self, self_open_id: str) -> None:
        self.self_open_id = self_open_id
        self.segments: list[Segment] = []
        self.text: list[str] = []
        self._after_self = False

    def add_text(self, text: str) -> None:
        if not text:
            return
        text_for_model = text[1:] if self._after_self and text.startswith(" ") else text
        self._after_self = False
        self.text.append(text_for_model)
        if self.segments and self.segments[-1].type == "text":
            self.segments[-1] = Segment.plain(self.segments[-1].text + text)
        else:
            self.segments.append(Segment.plain(text))

    def add_mention(self, mention: Mention | None, key: str, fallback_name: str = "") -> None:
        if mention is None:
            everyone = key == _ALL
            name = "all" if everyone else (fallback_name or key.lstrip("@"))
            data: dict[str, Any] = {"key": key, "all": True} if everyone else {"key": key}
            if not everyone and not key.startswith("@_"):
                data["open_id"] = key
            self.segments.append(Segment("mention", f"@{name}", data))
            self.text.append(f"@{name}")
            self._after_self = False
            return
        is_self = bool(self.self_open_id) and mention.open_id == self.self_open_id
        data = {"key": mention.key, "open_id": mention.open_id, "name": mention.name}
        if is_self:
            data["self"] = True
        self.segments.append(Segment("mention", f"@{mention.name}", data))
        if not is_self:
            self.text.append(f"@{mention.name}")
        self._after_self = is_self

    def add_other(self, kind: str, placeholder: str, data: dict[str, Any]) -> None:
        segment = Segment("image" if kind == "image" else "other", placeholder, data)
        self.segments.append(segment)
        self.text.append(placeholder)
        self._after_self = False

    def result(self) -> tuple[tuple[Segment, ...], str]:
        return tuple(self.segments), "".join(self.text).strip()


def parse_content(
    message_type: str, content: str, mentions: Iterable[Mention], self_open_id: str
) -> tuple[tuple[Segment, ...], str]:
    """The segments of a received message and the text the model sees."""
    try:
        body = json.loads(content) if content else {}
    except json.JSONDecodeError:
        body = {"text": content}
    if not isinstance(body, dict):
        body = {}
    by_key = {m.key: m for m in mentions}
    out = _Builder(self_open_id)
    if message_type == "text":
        _text_with_mentions(out, str(body.get("text", "")), by_key)
    elif message_type == "post":
        _flatten_post(out, body, by_key)
    elif message_type == "image":
        out.add_other("image", "[image]", {"image_key": body.get("image_key", "")})
    else:
        placeholder = _PLACEHOLDERS.get(message_type, f"[{message_type}]")
        if message_type == "file" and body.get("file_name"):
            placeholder = f"[file: {body['file_name']}]"
        out.add_other(message_type, placeholder, {"message_type": message_type, **body})
    return out.result()


def _text_with_mentions(out: _Builder, text: str, by_key: Mapping[str, Mention]) -> None:
    keys = sorted({*by_key, _ALL}, key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(k) for k in keys))
    position = 0
    for match in pattern.finditer(text):
        out.add_text(text[position : match.start()])
        out.add_mention(by_key.get(match.group()), match.group())
        position = match.end()
    out.add_text(text[position:])


def _flatten_post(out: _Builder, body: dict[str, Any], by_key: Mapping[str, Mention]) -> None:
    if "content" not in body:  # {"zh_cn": {...}} as sent; received posts are usually unwrapped
        body = next((v for v in body.values() if isinstance(v, dict) and "content" in v), {})
    title = str(body.get("title") or "")
    paragraphs = [p for p in body.get("content") or [] if isinstance(p, list)]
    if title:
        out.add_text(title + ("\n" if paragraphs else ""))
    for index, paragraph in enumerate(paragraphs):
        if index:
            out.add_text("\n")
        for element in paragraph:
            if isinstance(element, dict):
                _post_element(out, element, by_key)


def _post_element(out: _Builder, element: dict[str, Any], by_key: Mapping[str, Mention]) -> None:
    tag = element.get("tag")
    if tag in ("text", "md"):
        _text_with_mentions(out, str(element.get("text", "")), by_key)
    elif tag == "a":
        text, href = str(element.get("text") or ""), str(element.get("href") or "")
        out.add_text(text if not href or href == text else f"{text} ({href})")
    elif tag == "at":
        key = str(element.get("user_id") or "")
        out.add_mention(by_key.get(key), key, str(element.get("user_name") or ""))
    elif tag == "img":
        out.add_other("image", "[image]", {"image_key": element.get("image_key", "")})
    elif tag == "media":
        out.add_other("media", "[video]", {"message_type": "media", **element})
    elif tag == "emotion":
        out.add_text(f":{element.get('emoji_type', '')}:")
    elif tag == "code_block":
        language = str(element.get("language") or "").lower()
        out.add_text(f"```{language}\n{element.get('text', '')}\n```")
    elif tag == "hr":
        out.add_text("---")


# -- outbound ------------------------------------------------------------------------------------

_FENCE = re.compile(r"^\s*```(\S*)")
_MARKDOWN = [
    re.compile(r"^\s*```", re.M),  # code block
    re.compile(r"^#{1,6}\s+\S", re.M),  # heading
    re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__"),  # bold
    re.compile(r"\[[^\]\n]+\]\([^)\s]+\)"),  # link
    re.compile(r"^\s*\|?.*\|.*\n\s*\|?\s*:?-{3,}", re.M),  # table header + separator
    re.compile(r"^>\s", re.M),  # quote
]


def looks_like_markdown(text: str) -> bool:
    return any(p.search(text) for p in _MARKDOWN)


def split_text(text: str, limit: int = CHUNK_CHARS) -> list[str]:
    """Chunks of at most ~`limit` characters, cut at line ends; a cut code fence is reopened."""
    if len(text) <= limit:
        return [text]
    chunks: list[str] = []
    lines: list[str] = []
    size = 0
    fence: str | None = None  # the open fence's opening line, or None outside a fence

    def flush() -> None:
        nonlocal lines, size
        if lines:
            chunks.append("\n".join([*lines, "```"] if fence is not None else lines))
        lines = [fence] if fence is not None else []
        size = len(fence) if fence is not None else 0

    for line in _hard_wrap(text.split("\n"), limit - 8):
        if lines and size + len(line) + 1 > limit:
            flush()
        lines.append(line)
        size += len(line) + 1
        if _FENCE.match(line):
            fence = line.strip() if fence is None else None
    if lines:
        chunks.append("\n".join(lines))
    return chunks


def _hard_wrap(lines: list[str], width: int) -> Iterable[str]:
    for line in lines:
        while len(line) > width:
            yield line[:width]
            line = line[width:]
        yield line


def _md_rows(text: str) -> list[list[dict[str, Any]]]:
    """One `md` row per fenced code block and per stretch of prose between them."""
    rows: list[list[str]] = []
    current: list[str] = []
    inside = False
    for line in text.split("\n"):
        is_fence = bool(_FENCE.match(line))
        if is_fence and not inside:
            if current:
                rows.append(current)
            current, inside = [line], True
        elif is_fence and inside:
            current.append(line)
            rows.append(current)
            current, inside = [], False
        else:
            current.append(line)
    if current:
        rows.append(current)
    texts = ["\n".join(r).strip("\n") for r in rows]
    return [[{"tag": "md", "text": t}] for t in texts if t.strip()]


def render(reply: Reply, *, limit: int = CHUNK_CHARS) -> list[Outgoing]:
    """The messages that carry `reply`, in order; the mention goes on the first."""
    text = "".join(s.text for s in reply.segments if s.type in ("text", "mention")).strip()
    images = [s for s in reply.segments if s.type == "image" and s.data.get("image_key")]
    mention = reply.mention.id if reply.mention is not None else None
    out: list[Outgoing] = []
    if text:
        markdown = looks_like_markdown(text)
        for index, chunk in enumerate(split_text(text, limit)):
            at = mention if index == 0 else None
            out.append(_post_message(chunk, at) if markdown else _text_message(chunk, at))
    out.extend(Outgoing.of("image", {"image_key": s.data["image_key"]}) for s in images)
    return out


def _text_message(text: str, at: str | None) -> Outgoing:
    prefix = f'<at user_id="{at}"></at> ' if at else ""
    return Outgoing.of("text", {"text": prefix + text})


def _post_message(text: str, at: str | None) -> Outgoing:
    rows = _md_rows(text) or [[{"tag": "text", "text": text}]]
    if at:
        rows[0] = [{"tag": "at", "user_id": at}, {"tag": "text", "text": " "}, *rows[0]]
    return Outgoing.of("post", {POST_LOCALE: {"title": "", "content": rows}})
