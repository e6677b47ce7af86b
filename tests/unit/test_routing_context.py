"""Model routing per task and the prompt builder's budget."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from nahida.errors import ConfigError
from nahida.memory import Turn
from nahida.prompt import build_prompt, estimate_tokens
from nahida.providers.router import Route, resolve_routes


def test_missing_routes_fall_back_to_chat() -> None:
    routes = resolve_routes({"chat": "a/big", "compress": "a/small"}, {"a": "default"})
    assert routes["chat"] == Route("a", "big")
    assert routes["compress"] == Route("a", "small")
    assert routes["dream"] == routes["embed"] == routes["rerank"] == Route("a", "big")


def test_route_forms() -> None:
    defaults = {"a": "a-default", "b": "b-default"}
    routes = resolve_routes({"chat": "b", "dream": "a/x/y"}, defaults)
    assert routes["chat"] == Route("b", "b-default")
    assert routes["dream"] == Route("a", "x/y")  # model names may contain '/'
    assert resolve_routes({}, defaults)["chat"] == Route("a", "a-default")
    single = resolve_routes({"chat": "Qwen/Qwen2.5-7B"}, {"vllm": ""})
    assert single["chat"] == Route("vllm", "Qwen/Qwen2.5-7B")
    assert resolve_routes({}, {}) == {}


def test_route_errors_name_the_key() -> None:
    with pytest.raises(ConfigError, match=r"models\.dream: 'zzz/m' names no provider"):
        resolve_routes({"dream": "zzz/m"}, {"a": "x", "b": "y"})
    with pytest.raises(ConfigError, match="has no default model"):
        resolve_routes({}, {"a": ""})


def _turn(i: int, role: str, text: str) -> Turn:
    return Turn(i, "s", "c", role, text, datetime.now(UTC), speaker_name=f"u{i}")


def test_prompt_keeps_newest_turns_within_budget_and_fills_slots() -> None:
    hot = [_turn(i, "user" if i % 2 == 0 else "assistant", f"message {i} " * 20) for i in range(10)]
    prompt = build_prompt(
        persona="You are Nahida.",
        language="zh",
        now=datetime(2026, 1, 1, tzinfo=UTC),
        slots={
            "memory": "- [m_1] likes tea",
            "summary": "聊了茶。",
            "profile": "### 身份与背景\n- 是护士",
            "rules": "- [m_2] 用英文回答",
            "unknown": "ignored",
        },
        hot=hot,
        current="现在几点？",
        current_name="Bob",
        is_group=True,
        budget=400,
    )
    system = prompt.messages[0].content
    assert "You are Nahida." in system and "ignored" not in system
    assert "## About the person you are talking to\n### 身份与背景\n- 是护士" in system
    assert (
        "<behavioral_guidelines>" in system
        and "- [m_2] 用英文回答\n</behavioral_guidelines>" in system
    )
    assert "likes tea" not in system and "聊了茶" not in system  # not system text: context (§7)
    pairs = [(m.role, m.content) for m in prompt.messages[1:5]]
    assert pairs == [
        ("user", "[长期记忆]\n- [m_1] likes tea"),
        ("assistant", "好的。"),
        ("user", "[对话摘要]\n聊了茶。"),
        ("assistant", "好的。"),
    ]
    assert prompt.messages[-1].content == "Bob: 现在几点？"
    kept = prompt.messages[5:-1]
    assert 0 < len(kept) < 10
    assert prompt.dropped_turns == 10 - len(kept)
    assert kept[-1].content.endswith(hot[-1].content)  # the newest turns survive
    assert prompt.tokens <= 400


def test_english_context_pairs_and_no_empty_slots() -> None:
    prompt = build_prompt(
        persona="P",
        language="en",
        now=datetime(2026, 1, 1, tzinfo=UTC),
        slots={"summary": "talked about tea", "memory": "  "},
        hot=[],
        current="hi",
        current_name=None,
        is_group=False,
        budget=1000,
    )
    assert [m.content for m in prompt.messages[1:]] == [
        "[Conversation summary]\ntalked about tea",
        "OK.",
        "hi",
    ]
    assert "<behavioral_guidelines>" not in prompt.messages[0].content


def test_token_estimate_counts_cjk_per_character() -> None:
    assert estimate_tokens("你好世界") == 4
    assert estimate_tokens("abcdefgh") == 2


def test_a_turn_shown_again_reads_as_it_did_where_it_was_said() -> None:
    """Hot-window lines are remembered between prompts: by everything they are made of."""
    hot = [_turn(0, "user", "同一句话"), _turn(1, "assistant", "好")]

    def shown(is_group: bool, turns: list[Turn] = hot) -> list[tuple[str, str]]:
        prompt = build_prompt(
            persona="P",
            language="zh",
            now=datetime(2026, 1, 1, tzinfo=UTC),
            slots={},
            hot=turns,
            current="再说一次",
            current_name="u9",
            is_group=is_group,
            budget=1000,
        )
        return [(m.role, m.content) for m in prompt.messages[1:-1]]

    group = [("user", "u0: 同一句话"), ("assistant", "好")]
    assert shown(True) == shown(True) == group
    assert shown(False) == [("user", "同一句话"), ("assistant", "好")]
    renamed = [replace(hot[0], speaker_name="小明"), hot[1]]
    assert shown(True, renamed)[0] == ("user", "小明: 同一句话")
    assert shown(True) == group


def test_a_long_line_is_shown_whole_and_not_remembered() -> None:
    from nahida import prompt as module

    long = "长" * (module.REMEMBERED_CHARS + 1)
    before = module._remembered_line.cache_info().currsize
    shown = build_prompt(
        persona="P",
        language="zh",
        now=datetime(2026, 1, 1, tzinfo=UTC),
        slots={},
        hot=[_turn(0, "assistant", long)],
        current="嗯",
        current_name=None,
        is_group=False,
        budget=1000,
    )
    assert shown.messages[1].content == long
    assert module._remembered_line.cache_info().currsize == before
