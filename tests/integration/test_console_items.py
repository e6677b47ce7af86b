"""The Items pages: the filtered listing, an item in full, and its corrections from the console,
each audited as "console"; memory text stays text; refusals are shown."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.console_data import GROUP, HOSTILE
from tests.integration.console_client import Console, console_client


@pytest.fixture
async def console(tmp_path: Path) -> AsyncIterator[Console]:
    async for made in console_client(tmp_path):
        yield made


async def item_id(console: Console, words: str) -> str:
    found = await console.memory.admin.items(text=words)
    return found.rows[0].id


async def test_the_listing_filters_and_pages(console: Console) -> None:
    await console.login()
    page = await console.client.get("/admin/items", params={"scope": "chat", "limit": "2"})
    html = await page.text()
    assert page.status == 200
    assert len(re.findall(r'<tr class="item ', html)) == 2
    assert 'rel="next"' in html and "offset=2" in html
    api = await (await console.client.get(f"/admin/api/items?scope=chat:{GROUP}")).json()
    assert api["total"] == 3 and {r["scope"] for r in api["rows"]} == {f"chat:{GROUP}"}
    bad = await console.client.get("/admin/items", params={"kind": "nonsense"})
    assert bad.status == 400 and 'role="alert"' in await bad.text()


async def test_memory_text_is_escaped_on_item_pages(console: Console) -> None:
    await console.login()
    html = await (await console.client.get("/admin/items")).text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html
    hostile = await item_id(console, "book review")
    page = await (await console.client.get(f"/admin/items/{hostile}")).text()
    assert "&lt;script&gt;alert(1)" in page and "<script>alert" not in page
    api = await (await console.client.get(f"/admin/api/items/{hostile}")).json()
    assert HOSTILE in api["item"]["content"]


async def test_edit_forget_restore_are_audited_as_the_console(console: Console) -> None:
    csrf = await console.login()
    old = await item_id(console, "peanuts")
    edit = await console.client.post(
        f"/admin/items/{old}/edit",
        data={"csrf": csrf, "text": "Alice is allergic to peanuts and walnuts"},
        allow_redirects=False,
    )
    assert edit.status == 303
    new = edit.headers["Location"].split("/admin/items/")[1].split("?")[0]
    page = await (await console.client.get(f"/admin/items/{new}")).text()
    assert "walnuts" in page and "console" in page
    forget = await console.client.post(f"/admin/items/{new}/forget", data={"csrf": csrf})
    assert forget.status == 200
    assert (await console.memory.items.get(new)).status == "archived"  # type: ignore[union-attr]
    await console.client.post(f"/admin/items/{new}/restore", data={"csrf": csrf})
    assert (await console.memory.items.get(new)).status == "active"  # type: ignore[union-attr]
    events = (await console.memory.admin.item(new)).events  # type: ignore[union-attr]
    assert {"archive", "restore"} <= {e.action for e in events}
    assert all(e.actor == "console" for e in events if e.action in ("archive", "restore"))
    api = await console.client.post(
        f"/admin/api/items/{new}/change", json={"sensitivity": "public"},
        headers={"X-CSRF-Token": csrf},
    )  # fmt: skip
    assert api.status == 200, await api.text()
    assert (await console.memory.items.get(new)).sensitivity == "public"  # type: ignore[union-attr]


async def test_refused_actions_are_shown(console: Console) -> None:
    csrf = await console.login()
    target = await item_id(console, "Carol")
    empty = await console.client.post(
        f"/admin/items/{target}/edit", data={"csrf": csrf, "text": ""}
    )
    assert empty.status == 400 and 'role="alert"' in await empty.text()
    unconfirmed = await console.client.post(
        f"/admin/items/{target}/purge", data={"csrf": csrf, "confirm": "nope"}
    )
    assert unconfirmed.status == 400 and await console.memory.items.get(target) is not None
    restore = await console.client.post(f"/admin/items/{target}/restore", data={"csrf": csrf})
    assert restore.status == 400 and "active" in await restore.text()
    missing = await console.client.get("/admin/items/m_nope")
    assert missing.status == 404


async def test_purge_needs_the_typed_id(console: Console) -> None:
    csrf = await console.login()
    target = await item_id(console, "Carol")
    purged = await console.client.post(
        f"/admin/items/{target}/purge", data={"csrf": csrf, "confirm": target},
        allow_redirects=False,
    )  # fmt: skip
    assert purged.status == 303 and "purged=" in purged.headers["Location"]
    assert await console.memory.items.get(target) is None
