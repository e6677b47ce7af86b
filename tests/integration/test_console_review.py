"""The Review page: a dream's op with its diff and evidence; accept, reject, edit-then-accept and
several at once, as the console; refusals shown."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from nahida.console.review import word_diff
from tests.console_data import DREAM_UPDATE, HOSTILE, seed_review
from tests.integration.console_client import Console, console_client


@pytest.fixture
async def console(tmp_path: Path) -> AsyncIterator[Console]:
    async for made in console_client(tmp_path):
        yield made


def test_the_word_diff_marks_what_changed() -> None:
    pieces = [(p.kind, p.text) for p in word_diff("meets on Friday evenings", "meets on Saturday")]
    assert ("del", "Friday evenings") in pieces and ("ins", "Saturday") in pieces
    assert [p.kind for p in word_diff("周五发周报", "周四发周报")] == ["same", "del", "ins", "same"]


async def test_the_queue_shows_the_diff_and_evidence(console: Console) -> None:
    await console.login()
    html = await (await console.client.get("/admin/review")).text()
    assert "<del>Friday</del><ins>Saturday</ins>" in html and "<ins>mornings</ins>" in html
    assert "Friday?" in html and "supersede" in html
    api = await (await console.client.get("/admin/api/review")).json()
    assert api["rows"][0]["op"] == "supersede" and api["rows"][0]["content"] == DREAM_UPDATE


async def test_accepting_a_dream_op_updates_the_item_as_the_console(console: Console) -> None:
    csrf = await console.login()
    queue = await console.memory.items.review_queue(console_actor())
    pending = queue[0]
    answer = await console.client.post(
        "/admin/review/decide",
        data={"csrf": csrf, "id": pending.id, "decision": "accept"},
        allow_redirects=False,
    )
    assert answer.status == 303
    assert pending.target is not None
    page = await console.memory.admin.item(pending.target.id)
    assert page is not None
    assert page.item.content == DREAM_UPDATE or any(i.content == DREAM_UPDATE for i in page.later)
    assert await console.memory.items.review_queue(console_actor()) == []


async def test_edit_then_accept_and_several_at_once(console: Console) -> None:
    csrf = await console.login()
    first = (await console.memory.items.review_queue(console_actor()))[0].id
    edited = await console.client.post(
        "/admin/review/decide",
        data={"csrf": csrf, "id": first, "decision": "edit", "text": f"Sundays {HOSTILE}"},
    )
    assert edited.status == 200
    found = await console.memory.admin.items(text="Sundays")
    assert found.rows and found.rows[0].source == "human_edit"
    two = [
        await seed_review(console.memory, "a month", "The club reads two books a month"),
        await seed_review(console.memory, "Carol", "The bot's admin is Dave"),
    ]
    bulk = await console.client.post(
        "/admin/api/review", json={"ids": two, "decision": "reject"},
        headers={"X-CSRF-Token": csrf},
    )  # fmt: skip
    assert (await bulk.json())["results"] == dict.fromkeys(two, "rejected")


async def test_refused_decisions_are_shown(console: Console) -> None:
    csrf = await console.login()
    nothing = await console.client.post("/admin/review/decide", data={"csrf": csrf})
    assert nothing.status == 400 and 'role="alert"' in await nothing.text()


def console_actor():  # type: ignore[no-untyped-def]
    from nahida.console.pages import ACTOR

    return ACTOR
