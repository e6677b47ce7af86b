"""Recall as a viewer in the console: the bot's own recall, with its scope rules exactly, and the
answer in the shape `nahida memory search --json` prints."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.console_data import (
    ALICE_DM,
    BOB,
    BOB_DM,
    BOB_PRIVATE,
    GROUP,
    GROUP_TEXT,
)
from tests.integration.console_client import Console, console_client

CLI_SHAPE = {"q", "chat", "user", "at", "mode", "hits", "took_ms"}  # test_memory_cli's
HIT_SHAPE = {"kind", "id", "text", "score", "scope", "message_ids", "time", "speaker"}


@pytest.fixture
async def console(tmp_path: Path) -> AsyncIterator[Console]:
    async for made in console_client(tmp_path):
        yield made


async def ask(console: Console, **query: str) -> dict[str, Any]:
    answer = await console.client.get("/admin/api/search", params=query)
    assert answer.status == 200, await answer.text()
    found: dict[str, Any] = await answer.json()
    return found


def texts(found: dict[str, Any]) -> str:
    return "\n".join(hit["text"] for hit in found["hits"])


async def test_in_the_group_a_person_sees_the_groups_memory_not_anothers_private(
    console: Console,
) -> None:
    await console.login()
    found = await ask(console, chat=GROUP, user="42", q="book")
    assert set(found) == CLI_SHAPE
    assert all(set(hit) == HIT_SHAPE for hit in found["hits"])
    shown = texts(found)
    assert GROUP_TEXT in shown
    assert "Solaris" in shown  # Alice's public memory, hers to see in the group
    assert BOB_PRIVATE not in shown and "return the book to Mei" not in shown
    assert "peanuts" not in shown  # even her own private memory stays out of the group
    assert {hit["scope"] for hit in found["hits"]} <= {"global", f"chat:{GROUP}", "user:onebot:42"}
    turns = [hit for hit in found["hits"] if hit["kind"] == "turn"]
    assert turns and {hit["speaker"] for hit in turns} <= {"Alice", "Bob"}


async def test_in_a_private_chat_the_person_sees_their_own_memory_only(console: Console) -> None:
    await console.login()
    bob = texts(await ask(console, chat=BOB_DM, q="book sister"))
    assert BOB_PRIVATE in bob and "return the book to Mei" in bob
    assert GROUP_TEXT not in bob and "Halfway through" not in bob  # the group's stays there
    alice = texts(await ask(console, chat=ALICE_DM, q="book sister"))
    assert BOB_PRIVATE not in alice and "Mei" not in alice


async def test_the_page_shows_what_the_api_answers(console: Console) -> None:
    await console.login()
    query = {"chat": GROUP, "user": BOB, "q": "book", "limit": "5"}
    found = await ask(console, **query)
    assert len(found["hits"]) <= 5 and found["user"] == BOB
    html = await (await console.client.get("/admin/memory", params=query)).text()
    for hit in found["hits"]:
        assert f'data-id="{hit["id"]}"' in html
    assert f"chat:{GROUP}" in html and "user:onebot:43" in html  # what this viewer sees
    assert BOB_PRIVATE not in html  # Bob's own private memory stays out of the group too


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ({"chat": "not-a-chat", "q": "book"}, "chat"),
        ({"chat": BOB_DM, "user": "42", "q": "book"}, "private chat"),
        ({"chat": GROUP, "user": "lark:42", "q": "book"}, "platform"),
        ({"chat": GROUP, "q": "book", "limit": "500"}, "limit"),
        ({"chat": GROUP}, "question"),
        ({}, "chat and q"),
    ],
)
async def test_a_bad_question_is_answered_400(
    console: Console, query: dict[str, str], error: str
) -> None:
    await console.login()
    answer = await console.client.get("/admin/api/search", params=query)
    assert answer.status == 400
    assert error in (await answer.json())["error"]
    if query:
        page = await console.client.get("/admin/memory", params=query)
        assert page.status == 400 and error in await page.text()
