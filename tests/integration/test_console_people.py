"""The People pages: the paginated list, a person's page, and a profile section rewritten in place
as the console; memory text stays text; refusals are shown."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from nahida.memory.core.models import PROFILE_SECTIONS
from tests.console_data import ALICE, BOB, HOSTILE
from tests.integration.console_client import Console, console_client

SECTION = PROFILE_SECTIONS[0]


@pytest.fixture
async def console(tmp_path: Path) -> AsyncIterator[Console]:
    async for made in console_client(tmp_path):
        yield made


async def test_the_list_pages_and_links_each_person(console: Console) -> None:
    await console.login()
    html = await (await console.client.get("/admin/people?limit=1")).text()
    assert html.count('<tr class="person"') == 1 and 'rel="next"' in html
    api = await (await console.client.get("/admin/api/people")).json()
    assert {r["user"] for r in api["rows"]} >= {ALICE, BOB} and api["total"] >= 2
    assert "Alice" in await (await console.client.get("/admin/people")).text()


async def test_a_persons_page_shows_names_and_items(console: Console) -> None:
    await console.login()
    page = await console.client.get(f"/admin/people/{ALICE}")
    html = await page.text()
    assert page.status == 200 and "Alice" in html and "peanuts" in html
    assert (await console.client.get("/admin/people/onebot:999")).status == 404
    api = await (await console.client.get(f"/admin/api/people/{ALICE}")).json()
    assert api["person"]["user"] == ALICE and api["items"]["total"] >= 2


async def test_a_section_is_rewritten_as_the_console_and_escaped(console: Console) -> None:
    csrf = await console.login()
    answer = await console.client.post(
        f"/admin/people/{BOB}/profile",
        data={"csrf": csrf, "section": SECTION, "text": f"reads slowly\n{HOSTILE}"},
        allow_redirects=False,
    )
    assert answer.status == 303, await answer.text()
    html = await (await console.client.get(answer.headers["Location"])).text()
    assert "reads slowly" in html and "&lt;script&gt;alert(1)" in html
    assert "<script>alert" not in html
    page = await console.memory.admin.person(BOB)
    assert page is not None
    entry = next(e for e in page.profile if e.text == "reads slowly")
    events = await console.memory.store.read(lambda tx: tx.events.of_item(entry.id))
    assert events and all(e.actor == "console" for e in events)


async def test_refused_rewrites_are_shown(console: Console) -> None:
    csrf = await console.login()
    bad = await console.client.post(
        f"/admin/people/{BOB}/profile", data={"csrf": csrf, "section": "nope", "text": "x"}
    )
    assert bad.status == 400 and 'role="alert"' in await bad.text()
