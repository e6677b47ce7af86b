"""CQ codes and segments: exact escaping, round trips, and agreement with nonebot's `Message`."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from nonebot.adapters.onebot.v11 import Message
from nonebot.adapters.onebot.v11 import MessageSegment as NbSegment

from nahida.adapters.onebot.message import (
    MessageFormatError,
    MessageSegment,
    escape,
    from_reply,
    merge_text,
    parse_cq,
    parse_message,
    plain_text,
    to_cq,
    to_segments,
    unescape,
)
from nahida.envelope import ChatKey, Reply, Segment, UserKey


def seg(kind: str, **data: str) -> MessageSegment:
    return MessageSegment(kind, data)


def oracle(text: str) -> list[tuple[str, dict[str, str]]]:
    return [(s.type, dict(s.data)) for s in Message(text)]


def ours(text: str) -> list[tuple[str, dict[str, str]]]:
    return [(s.type, {k: str(v) for k, v in s.data.items()}) for s in parse_cq(text)]


# -- escaping -----------------------------------------------------------------------------------


def test_escape_text_and_values_exactly() -> None:
    assert escape("a&b[c]d,e", comma=False) == "a&amp;b&#91;c&#93;d,e"
    assert escape("a&b[c]d,e", comma=True) == "a&amp;b&#91;c&#93;d&#44;e"


def test_unescape_replaces_amp_last() -> None:
    # `&amp;#91;` is an escaped literal "&#91;", not a bracket
    assert unescape("&amp;#91;") == "&#91;"
    assert unescape("&#91;&#93;&#44;&amp;") == "[],&"


@given(st.text())
def test_escape_round_trip(value: str) -> None:
    assert unescape(escape(value, comma=False)) == value
    assert unescape(escape(value, comma=True)) == value


# -- parsing ------------------------------------------------------------------------------------


def test_parse_cq_string() -> None:
    parsed = parse_cq(
        "hi [CQ:at,qq=10001] &#91;x&#93;[CQ:image,file=a.jpg,url=https://x/?a=1&amp;b=2]"
    )
    assert parsed == [
        seg("text", text="hi "),
        seg("at", qq="10001"),
        seg("text", text=" [x]"),
        seg("image", file="a.jpg", url="https://x/?a=1&b=2"),
    ]


def test_parameter_splits_on_first_equals_only() -> None:
    assert parse_cq("[CQ:json,data=a=b=c]") == [seg("json", data="a=b=c")]


def test_comma_in_value_is_escaped_and_restored() -> None:
    assert parse_cq("[CQ:share,title=a&#44;b,url=u]") == [seg("share", title="a,b", url="u")]


def test_code_without_params_and_trailing_comma() -> None:
    assert parse_cq("[CQ:shake][CQ:face,id=1,]") == [seg("shake"), seg("face", id="1")]


def test_unknown_types_and_broken_codes_stay() -> None:
    assert parse_cq("[CQ:mface,emoji_id=x]") == [seg("mface", emoji_id="x")]
    # not a valid code: stays text
    assert parse_cq("[CQ:at qq=1] [CQ:") == [seg("text", text="[CQ:at qq=1] [CQ:")]


def test_parse_message_accepts_array_string_and_single_object() -> None:
    array = [{"type": "text", "data": {"text": "a"}}, {"type": "at", "data": {"qq": 5}}]
    assert parse_message(array) == [seg("text", text="a"), MessageSegment("at", {"qq": 5})]
    assert parse_message("a[CQ:at,qq=5]") == [seg("text", text="a"), seg("at", qq="5")]
    assert parse_message({"type": "face", "data": {"id": "1"}}) == [seg("face", id="1")]
    assert parse_message([{"type": "node"}]) == [MessageSegment("node", {})]


@pytest.mark.parametrize("bad", [5, None, [1], [{"data": {}}], [{"type": 3}]])
def test_parse_message_rejects_what_is_no_message(bad: object) -> None:
    with pytest.raises(MessageFormatError):
        parse_message(bad)


# -- against the oracle -------------------------------------------------------------------------

CASES = [
    "",
    "plain",
    "[CQ:at,qq=10001] hello",
    "a&amp;b&#91;c&#93;d,e[CQ:face,id=14]",
    "[CQ:image,file=a&#44;b=c,url=https://x/?a=1&amp;b=2]tail",
    "[CQ:reply,id=-5][CQ:at,qq=10001] [CQ:at,qq=all]",
    '[CQ:json,data={"a":1&#44;"b":&#91;2&#93;}]',
    "&amp;#91; stays",
    "[CQ:bad code] [CQ:x,y=z",
    "[CQ:face,id=1,][CQ:shake]",
]


@pytest.mark.parametrize("text", CASES)
def test_parse_agrees_with_nonebot(text: str) -> None:
    assert ours(text) == oracle(text)


keys = st.from_regex(r"[a-zA-Z0-9_.\-]{1,8}", fullmatch=True)
kinds = st.from_regex(r"[a-zA-Z0-9_.\-]{1,8}", fullmatch=True).filter(lambda k: k != "text")
non_text = st.builds(MessageSegment, kinds, st.dictionaries(keys, st.text(max_size=12), max_size=3))
text_seg = st.builds(MessageSegment.text, st.text(max_size=20))
segment_lists = st.lists(st.one_of(text_seg, non_text), max_size=6)


@given(segment_lists)
def test_cq_round_trip(segments: list[MessageSegment]) -> None:
    assert parse_cq(to_cq(segments)) == merge_text(segments)


@given(segment_lists)
def test_rendering_agrees_with_nonebot(segments: list[MessageSegment]) -> None:
    theirs = str(Message([NbSegment(s.type, dict(s.data)) for s in segments]))
    assert to_cq(segments) == theirs
    assert ours(theirs) == oracle(theirs)


@given(st.text(alphabet=st.sampled_from("ab[],=&#;:CQ9 "), max_size=40))
def test_parse_of_any_string_agrees_with_nonebot(text: str) -> None:
    assert ours(text) == oracle(text)


# -- segments to and from the envelope ----------------------------------------------------------


def test_to_segments_keeps_everything() -> None:
    parsed = parse_cq("hi[CQ:at,qq=5,name=Bob][CQ:reply,id=9][CQ:image,url=u][CQ:mface,emoji_id=x]")
    assert to_segments(parsed) == (
        Segment("text", "hi"),
        Segment("mention", "@Bob", {"qq": "5", "name": "Bob"}),
        Segment("reply", "", {"id": "9"}),
        Segment("image", "", {"url": "u"}),
        Segment("other", "", {"type": "mface", "data": {"emoji_id": "x"}}),
    )


def test_plain_text_shows_mentions_and_images() -> None:
    parsed = parse_cq(" [CQ:at,qq=5] 看[CQ:image,url=u][CQ:face,id=1][CQ:at,qq=all] ")
    assert plain_text(parsed) == "@5 看[image]@all"


def test_reply_quotes_mentions_then_content() -> None:
    chat = ChatKey("onebot", "group", "20001")
    reply = Reply(
        chat,
        (Segment.plain("hi"), Segment("other", "", {"type": "mface", "data": {"id": "x"}})),
        quote="-5",
        mention=UserKey("onebot", "30001"),
    )
    assert from_reply(reply) == [
        {"type": "reply", "data": {"id": "-5"}},
        {"type": "at", "data": {"qq": "30001"}},
        {"type": "text", "data": {"text": " hi"}},
        {"type": "mface", "data": {"id": "x"}},
    ]


def test_private_reply_has_no_mention() -> None:
    chat = ChatKey("onebot", "private", "30001")
    reply = Reply.text(chat, "hi", mention=UserKey("onebot", "30001"))
    assert from_reply(reply) == [{"type": "text", "data": {"text": "hi"}}]


code_parts = st.sampled_from(["[CQ:", "at", "qq=1", "a=b=c", ",", "]", "[", "=", "x y", "&#44;"])


@given(st.lists(code_parts, max_size=16).map("".join))
def test_parse_of_code_like_strings_agrees_with_nonebot(text: str) -> None:
    # codes that open, nest, close early or never: where a code starts and ends is the oracle's
    assert ours(text) == oracle(text)
