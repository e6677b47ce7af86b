"""The Overview, Chats and Dreams pages and their JSON twins over the seeded memory: what they
show, memory text escaped, listings a page at a time, and dreaming steered as the console."""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import pytest

from nahida.console.activity import chat_url
from nahida.memory import Actor
from nahida.memory.core.sources import source_family
from tests.console_data import (
    BOB_DM,
    DREAM_REJECTED,
    DREAM_RUN,
    GROUP,
    HOSTILE,
    ITEMS,
    TURNS,
)
from tests.integration.console_client import Console, console_client


@pytest.fixture
async def console(tmp_path: Path) -> AsyncIterator[Console]:
    async for made in console_client(tmp_path):
        await made.login()
        yield made


async def page(console: Console, path: str, status: int = 200) -> str:
    answer = await console.client.get(path)
    text = await answer.text()
    assert answer.status == status, (path, text[:500])
    return text


async def test_overview_counts_and_charts_match_memory(console: Console) -> None:
    await console.checked()
    text = await page(console, "/admin/")
    assert f'id="count-items">{len(ITEMS)}<' in text
    assert f'id="count-turns">{len(TURNS)}<' in text
    assert "coming" not in text
    series = await console.memory.admin.series(14)
    today = series.days[-1]
    for family, count in today.added.items():
        if count:
            cell = f'<td data-name="{family}">{count}</td>'
            assert cell in text, family
    families = {source_family(i.source) for i in (await console.memory.admin.items()).rows}
    assert sum(today.added.get(f, 0) for f in families) == len(ITEMS)
    # the dream run of the seed: one proposal of each fate today
    dreams = re.search(r'data-chart="chart-dreams".*?</table>', text, re.S)
    assert dreams is not None
    row = dreams[0][dreams[0].index(f'data-day="{today.day.isoformat()}"') :]
    for fate in ("applied", "pending", "rejected"):
        assert f'<td data-name="{fate}">1</td>' in row
    assert '<rect class="seg seg-' in text and "<title>" in text
    assert "-- provider main NOT reachable" in text  # the doctor's warnings, masked
    backlog = re.search(r'id="backlog">(.*?)</table>', text, re.S)
    assert backlog is not None and "<td>7</td>" in backlog[1] and "<td>3</td>" in backlog[1]
    assert "sk-console-test" not in text


async def test_overview_answers_as_json(console: Console) -> None:
    await console.checked()
    data = await (await console.client.get("/admin/api/overview")).json()
    assert data["overview"]["items"] == len(ITEMS)
    assert data["series"]["days"][-1]["dream_runs"] == 1
    # the backlog the last checkup counted, so no page counts every searchable row
    assert data["backlog"] == {"stored": 7, "pending": 3, "other": 1, "skipped": 2}
    assert any("NOT reachable" in w for w in data["warnings"])


async def test_chats_list_and_a_chats_page(console: Console) -> None:
    text = await page(console, "/admin/chats")
    for chat in (GROUP, BOB_DM):
        assert f'href="{chat_url(chat)}"' in text
    chat = await page(console, chat_url(GROUP))
    assert "onebot:group:1001" in chat and "/admin/sessions/" in chat
    assert f"/admin/dreams/{DREAM_RUN}" in chat
    assert 'name="csrf"' in chat and 'value="pause"' in chat
    await page(console, chat_url("onebot:group:999"), 404)
    data = await (await console.client.get("/admin/api/chats")).json()
    assert {r["chat"] for r in data["rows"]} >= {GROUP, BOB_DM}
    one = await (await console.client.get("/admin/api/chats/" + quote(GROUP, safe=""))).json()
    assert one["chat"]["chat"] == GROUP and one["dreams"]["rows"][0]["id"] == DREAM_RUN
    sessions = await console.client.get(f"/admin/api/chats/{quote(GROUP, safe='')}/sessions")
    assert (await sessions.json())["total"] == 1


async def test_listings_go_a_page_at_a_time(console: Console) -> None:
    first = await page(console, "/admin/chats?limit=1")
    assert 'rel="next"' in first and 'rel="prev"' not in first
    assert first.count("<tr data-chat=") == 1
    second = await page(console, "/admin/chats?offset=1&limit=1")
    assert 'rel="prev"' in second
    data = await (await console.client.get("/admin/api/chats?offset=1&limit=1")).json()
    assert data["offset"] == 1 and data["limit"] == 1 and len(data["rows"]) == 1
    assert data["total"] >= 2
    await page(console, "/admin/chats?offset=-1", 400)
    bad = await console.client.get("/admin/api/chats?limit=x")
    assert bad.status == 400 and "error" in await bad.json()


async def test_a_transcript_shows_what_each_turn_recalled(console: Console) -> None:
    sessions = await console.memory.admin.sessions(GROUP)
    session = sessions.rows[0]
    text = await page(console, f"/admin/sessions/{session.id}")
    assert TURNS[0][3] in html.unescape(text)
    recall = re.search(r'<aside class="recall" data-hits="2">.*?</aside>', text, re.S)
    assert recall is not None and "The reading club meets on Friday" in recall[0]
    data = await (await console.client.get(f"/admin/api/sessions/{session.id}")).json()
    recalled = data["turns"]["rows"][0]["recall"]["items"]
    assert recalled and all(f'href="/admin/items/{i}"' in recall[0] for i in recalled)
    await page(console, "/admin/sessions/s_none", 404)
    limited = await page(console, f"/admin/sessions/{session.id}?limit=1")
    assert limited.count('class="turn ') == 1 and 'rel="next"' in limited


async def test_dreams_and_a_run_with_its_rejections_escaped(console: Console) -> None:
    text = await page(console, "/admin/dreams")
    assert f'data-run="{DREAM_RUN}"' in text
    run = await page(console, f"/admin/dreams/{DREAM_RUN}")
    assert DREAM_REJECTED in run and "evidence" in run
    assert HOSTILE not in run and html.escape(HOSTILE) in run
    only = await page(console, f"/admin/dreams?chat={quote(BOB_DM)}")
    assert DREAM_RUN not in only
    data = await (await console.client.get(f"/admin/api/dreams/{DREAM_RUN}")).json()
    assert [p["fate"] for p in data["report"]] == ["created", "pending", "rejected"]
    assert data["report"][2]["detail"] == DREAM_REJECTED
    listing = await (await console.client.get("/admin/api/dreams?limit=1")).json()
    assert listing["total"] == 1 and "report" in listing["rows"][0]
    await page(console, "/admin/dreams/d_none", 404)


async def test_memory_text_is_escaped_on_the_chat_pages(console: Console) -> None:
    for path in ("/admin/", chat_url(GROUP), "/admin/dreams"):
        assert "<script>alert" not in await page(console, path)


async def test_pause_resume_and_run_dreaming_as_the_console(console: Console) -> None:
    csrf = (await (await console.client.get("/admin/api/session")).json())["csrf_token"]
    target = chat_url(GROUP) + "/dreaming"
    same = {"Origin": "null"}
    answer = await console.client.post(
        target, data={"csrf": csrf, "action": "pause"}, headers=same, allow_redirects=False
    )
    assert answer.status == 303 and answer.headers["Location"].endswith("?done=paused")
    assert await console.memory.dreams.paused(GROUP)
    text = await page(console, answer.headers["Location"])
    assert 'id="done"' in text and 'value="resume"' in text
    api = await console.client.post(
        "/admin/api" + target.removeprefix("/admin"),
        json={"action": "resume"},
        headers={"X-CSRF-Token": csrf},
    )
    assert (await api.json())["done"] == "resumed"
    assert not await console.memory.dreams.paused(GROUP)
    # no dream model in the test config: run now says so instead of starting
    ran = await console.client.post(
        "/admin/api" + target.removeprefix("/admin"),
        json={"action": "run"},
        headers={"X-CSRF-Token": csrf},
    )
    assert (await ran.json())["done"] in ("no_model", "started")
    wrong = await console.client.post(
        "/admin/api" + target.removeprefix("/admin"),
        json={"action": "explode"},
        headers={"X-CSRF-Token": csrf},
    )
    assert wrong.status == 400


async def test_english_when_asked(console: Console) -> None:
    text = await page(console, "/admin/chats?lang=en")
    assert "Chats with history" in text
    assert "有记录的聊天" in await page(console, "/admin/chats?lang=zh")


async def test_dream_now_runs_in_the_background_as_the_console(
    console: Console, monkeypatch: pytest.MonkeyPatch
) -> None:
    dreams = console.memory.dreams
    asked: list[tuple[str, str, str]] = []
    release = asyncio.Event()

    async def run(chat: str, trigger: str, *, actor: Actor) -> None:
        asked.append((chat, trigger, actor.label))
        await release.wait()  # a run takes a while: the answer must not wait for it

    monkeypatch.setattr(type(dreams), "enabled", property(lambda self: True))
    monkeypatch.setattr(dreams, "run", run)
    csrf = (await (await console.client.get("/admin/api/session")).json())["csrf_token"]
    answer = await console.client.post(
        chat_url(GROUP) + "/dreaming",
        data={"csrf": csrf, "action": "run"},
        headers={"Origin": "null"},
        allow_redirects=False,
    )
    assert answer.headers["Location"].endswith("?done=started")
    await asyncio.sleep(0)
    assert asked == [(GROUP, "console", Actor.console().label)]
    text = await page(console, answer.headers["Location"])
    assert "Dream now" in await page(console, chat_url(GROUP) + "?lang=en")
    assert 'id="done"' in text
    release.set()


async def test_overview_waits_for_no_checkup(tmp_path: Path) -> None:
    """Before the first checkup is in, the Overview says so; without the checks, too."""
    async for console in console_client(tmp_path, checks=False):
        await console.login()
        text = await page(console, "/admin/")
        assert '<p class="muted" id="backlog">检查尚未完成' in text
        data = await (await console.client.get("/admin/api/overview")).json()
        assert data["backlog"] is None and data["warnings"] == []
