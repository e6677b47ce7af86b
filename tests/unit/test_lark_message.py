"""Lark message content ↔ segments: mentions, rich text, Markdown as post, splitting."""

from __future__ import annotations

import json

from nahida.adapters.lark.message import (
    Mention,
    looks_like_markdown,
    parse_content,
    render,
    split_text,
)
from nahida.envelope import ChatKey, Reply, Segment, UserKey

BOT = "ou_bot"
MENTIONS = [Mention("@_user_1", BOT, "Nahida"), Mention("@_user_2", "ou_bob", "Bob")]
GROUP = ChatKey("lark", "group", "oc_1")


def text_of(text: str, mentions: list[Mention] = MENTIONS) -> tuple[list[str], str]:
    segments, model_text = parse_content(
        "text", json.dumps({"text": text}), mentions, self_open_id=BOT
    )
    return [s.type for s in segments], model_text


def test_bot_mention_is_removed_and_others_read_by_name() -> None:
    types, text = text_of("@_user_1 ask @_user_2 about it")
    assert text == "ask @Bob about it"
    assert types == ["mention", "text", "mention", "text"]


def test_bot_mention_in_the_middle_leaves_one_space() -> None:
    assert text_of("hey @_user_1 what's up")[1] == "hey what's up"


def test_mention_segments_keep_the_open_id_and_mark_the_bot() -> None:
    segments, _ = parse_content(
        "text", json.dumps({"text": "@_user_1 @_user_2"}), MENTIONS, self_open_id=BOT
    )
    mentions = [s for s in segments if s.type == "mention"]
    assert [m.data["open_id"] for m in mentions] == [BOT, "ou_bob"]
    assert mentions[0].data.get("self") is True and "self" not in mentions[1].data
    assert [m.text for m in mentions] == ["@Nahida", "@Bob"]


def test_ten_or_more_mentions_resolve_the_longest_key_first() -> None:
    many = [Mention(f"@_user_{i}", f"ou_{i}", f"U{i}") for i in range(1, 12)]
    assert text_of("@_user_11 and @_user_1", many)[1] == "@U11 and @U1"


def test_at_all_without_a_mentions_entry() -> None:
    assert text_of("@_all meeting now", [])[1] == "@all meeting now"


def test_post_is_flattened_with_title_mentions_links_code_and_images() -> None:
    post = {
        "title": "Weekly",
        "content": [
            [
                {"tag": "at", "user_id": "@_user_1", "user_name": "Nahida"},
                {"tag": "text", "text": " sum up"},
            ],
            [
                {"tag": "a", "text": "the doc", "href": "https://example.com/d"},
                {"tag": "emotion", "emoji_type": "SMILE"},
            ],
            [{"tag": "img", "image_key": "img_v2_1"}],
            [{"tag": "code_block", "language": "PYTHON", "text": "print(1)"}],
            [{"tag": "at", "user_id": "@_user_2", "user_name": "Bob"}, {"tag": "unknown"}],
        ],
    }
    segments, text = parse_content("post", json.dumps(post), MENTIONS, self_open_id=BOT)
    assert text == (
        "Weekly\nsum up\nthe doc (https://example.com/d):SMILE:\n[image]\n"
        "```python\nprint(1)\n```\n@Bob"
    )
    images = [s for s in segments if s.type == "image"]
    assert [i.data["image_key"] for i in images] == ["img_v2_1"]


def test_post_wrapped_in_a_locale_is_read_too() -> None:
    post = {"en_us": {"title": "", "content": [[{"tag": "text", "text": "hello"}]]}}
    assert parse_content("post", json.dumps(post), [], BOT)[1] == "hello"


def test_image_and_file_messages_become_segments_with_placeholders() -> None:
    segments, text = parse_content("image", json.dumps({"image_key": "img_9"}), [], BOT)
    assert text == "[image]" and segments == (Segment("image", "[image]", {"image_key": "img_9"}),)
    segments, text = parse_content(
        "file", json.dumps({"file_key": "f1", "file_name": "a.pdf"}), [], BOT
    )
    assert text == "[file: a.pdf]" and segments[0].type == "other"


def test_broken_content_does_not_raise() -> None:
    assert parse_content("text", "not json", [], BOT)[1] == "not json"
    assert parse_content("post", "[1, 2]", [], BOT)[1] == ""


# -- outbound ---------------------------------------------------------------------------------


def test_plain_reply_is_text_with_the_mention_first() -> None:
    [out] = render(Reply.text(GROUP, "hello", mention=UserKey("lark", "ou_alice")))
    assert out.msg_type == "text"
    assert json.loads(out.content) == {"text": '<at user_id="ou_alice"></at> hello'}


def test_markdown_reply_is_a_post_of_md_rows_one_per_code_block() -> None:
    text = "**Steps**\n1. install\n\n```bash\npip install nahida\n```\nthen run it"
    [out] = render(Reply.text(GROUP, text, mention=UserKey("lark", "ou_alice")))
    assert out.msg_type == "post"
    rows = json.loads(out.content)["zh_cn"]["content"]
    assert rows == [
        [
            {"tag": "at", "user_id": "ou_alice"},
            {"tag": "text", "text": " "},
            {"tag": "md", "text": "**Steps**\n1. install"},
        ],
        [{"tag": "md", "text": "```bash\npip install nahida\n```"}],
        [{"tag": "md", "text": "then run it"}],
    ]


def test_markdown_detection() -> None:
    for text in [
        "# Title",
        "a **bold** word",
        "see [docs](https://x.y)",
        "> quoted",
        "```\nx\n```",
        "| a | b |\n|---|---|\n| 1 | 2 |",
    ]:
        assert looks_like_markdown(text), text
    for text in ["plain words", "a * b * c", "1. one\n2. two", "price: $5 - $10"]:
        assert not looks_like_markdown(text), text


def test_long_reply_is_split_and_only_the_first_part_mentions() -> None:
    text = "\n".join(f"line {i} " + "x" * 40 for i in range(100))
    outs = render(Reply.text(GROUP, text, mention=UserKey("lark", "ou_a")), limit=1000)
    assert len(outs) > 1
    texts = [json.loads(o.content)["text"] for o in outs]
    assert all(len(t) <= 1000 + 40 for t in texts)
    assert texts[0].startswith('<at user_id="ou_a"></at> ')
    assert not any("<at" in t for t in texts[1:])
    assert "\n".join(t.removeprefix('<at user_id="ou_a"></at> ') for t in texts) == text


def test_split_closes_and_reopens_a_code_fence() -> None:
    code = "\n".join(f"print({i})" for i in range(50))
    chunks = split_text(f"intro\n```python\n{code}\n```\nbye", limit=120)
    assert len(chunks) > 2
    for chunk in chunks:
        assert chunk.count("```") % 2 == 0, chunk
    assert all(c.startswith("```python") for c in chunks[1:-1])
    assert chunks[-1].endswith("bye")


def test_split_cuts_a_single_overlong_line() -> None:
    chunks = split_text("y" * 250, limit=100)
    assert "".join(chunks) == "y" * 250 and all(len(c) <= 100 for c in chunks)


def test_image_segments_are_sent_after_the_text() -> None:
    reply = Reply(GROUP, (Segment.plain("look"), Segment("image", "", {"image_key": "img_1"})))
    outs = render(reply)
    assert [o.msg_type for o in outs] == ["text", "image"]
    assert json.loads(outs[1].content) == {"image_key": "img_1"}
