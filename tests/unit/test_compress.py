"""Reading the compress model's answers (`memory/history/compress.py`): nothing in them is
trusted."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from nahida.memory.core.models import PROFILE_SECTIONS, Turn
from nahida.memory.history import compress

KEY = "sk-abcdef0123456789abcdef0123456789"


def turn(n: int, role: str, text: str, name: str | None = "小明") -> Turn:
    return Turn(
        id=n,
        session_id="s",
        chat="test:private:u1",
        role=role,
        content=text,
        time=datetime(2026, 5, 1, 9, n, tzinfo=UTC),
        speaker_name=name,
    )


def test_a_transcript_names_speakers_and_times_and_cuts_long_turns() -> None:
    text = compress.transcript(
        [turn(1, "user", "你好"), turn(2, "assistant", "在的"), turn(3, "user", "长" * 900)], UTC
    )
    lines = text.splitlines()
    assert lines[0] == "[05-01 09:01] 小明: 你好" and lines[1] == "[05-01 09:02] assistant: 在的"
    assert len(lines[2]) < 430 and lines[2].endswith("…")


def test_a_roll_answer_in_a_fence_with_bad_parts_keeps_what_is_usable() -> None:
    answer = (
        "好的，结果如下：\n```json\n"
        + json.dumps(
            {
                "facts": [
                    {"content": "项目代号是青鸟", "kind": "fact"},
                    {"content": "记住：周五交周报", "kind": "nonsense"},
                    {"kind": "fact"},
                    "not an object",
                    {"content": f"key 是 {KEY}", "kind": "fact"},
                ],
                "profile": [
                    {"section": "身份与背景", "text": "是护士"},
                    {"section": "星座", "text": "双子"},
                ],
                "summary": "聊了项目。",
            },
            ensure_ascii=False,
        )
        + "\n```"
    )
    parsed = compress.read_roll(answer)
    assert [(f.content, f.kind, f.explicit) for f in parsed.facts[:2]] == [
        ("项目代号是青鸟", "fact", False),
        ("记住：周五交周报", "fact", True),  # an unknown kind is a fact; 记住 is a strong signal
    ]
    assert KEY not in parsed.facts[2].content and "[REDACTED" in parsed.facts[2].content
    assert [(b.section, b.text) for b in parsed.profile] == [("身份与背景", "是护士")]
    assert parsed.summary == "聊了项目。"
    assert len(parsed.problems) == 3  # two facts without content, one unknown section


def test_a_roll_answer_without_json_gives_nothing() -> None:
    parsed = compress.read_roll("I could not do that.")
    assert parsed.facts == [] and parsed.summary == "" and parsed.problems
    assert compress.read_roll('{"facts": [}').summary == ""  # truncated


def test_only_the_sections_offered_are_kept() -> None:
    offered = [s for s in PROFILE_SECTIONS if s not in ("基础特征", "心理与情绪")]
    answer = json.dumps(
        {
            "facts": [],
            "profile": [
                {"section": "基础特征", "text": "30岁"},
                {"section": "心理与情绪", "text": "最近焦虑"},
                {"section": "目标与方向", "text": "想转行"},
            ],
            "summary": "x",
        },
        ensure_ascii=False,
    )
    parsed = compress.read_roll(answer, offered)
    assert [b.section for b in parsed.profile] == ["目标与方向"]
    request = compress.roll_request("x", person="test:u1", sections=offered)
    assert "心理与情绪" not in request[0].content.split("sections only:", 1)[1].split("\n")[0]


def test_an_episode_answer_as_json_and_one_without_it() -> None:
    parsed = compress.read_episode(
        json.dumps(
            {"summary": f"聊了京都旅行，token={KEY}", "keywords": ["京都", "旅行", "京都", 3, ""]}
        )
    )
    assert parsed.summary.startswith("聊了京都旅行") and KEY not in parsed.summary
    assert parsed.keywords == ["京都", "旅行"]
    plain = compress.read_episode("我们聊了旅行")  # a refusal or an error page reads the same
    assert plain.summary == "" and plain.problems == ["the answer holds no JSON object"]


def test_a_summary_is_bounded_and_redacted() -> None:
    text = compress.bounded("第一行\n\n\n第二行  很长 " + "字" * 2000 + f" {KEY}", 100)
    assert len(text) == 100 and text.startswith("第一行\n第二行 很长") and KEY not in text
