"""Helpers the console's memory pages share: reading a page of a listing from the query, the
time shown in the bot's zone, the console's actor, and refusals as the page or API words them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from aiohttp import web

from nahida.console.state import CONSOLE
from nahida.memory import Actor

PAGE_SIZE = 50  # rows a listing shows at once
ACTOR = Actor.console()  # every change the console makes is audited under "console"


def paging(query: Mapping[str, str]) -> tuple[int, int]:
    """`?offset=&limit=` as numbers; ValueError for what is not one."""
    offset = int(query.get("offset") or 0)
    limit = int(query.get("limit") or PAGE_SIZE)
    if offset < 0 or limit < 1:
        raise ValueError("offset and limit are counts")
    return offset, limit


def when_of(request: web.Request) -> Any:
    """A formatter of epoch seconds in the bot's zone (None shows as a dash)."""
    zone = request.app[CONSOLE].config.bot.zone()

    def when(moment: float | datetime | None) -> str:
        if moment is None:
            return "—"
        if isinstance(moment, datetime):
            return f"{moment.astimezone(zone):%Y-%m-%d %H:%M}"
        return f"{datetime.fromtimestamp(moment, zone):%Y-%m-%d %H:%M}"

    return when


def text_field(form: Mapping[str, Any], name: str) -> str | None:
    value = form.get(name)
    return value.strip() if isinstance(value, str) and value.strip() else None


def dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def answer(value: object, status: int = 200) -> web.Response:
    return web.json_response(value, status=status, dumps=dumps)


async def body_of(request: web.Request) -> dict[str, Any]:
    """An API change's JSON object (empty when there is none)."""
    if not request.can_read_body:
        return {}
    try:
        found = await request.json()
    except ValueError:
        raise web.HTTPBadRequest(reason="the body is not JSON") from None
    if not isinstance(found, dict):
        raise web.HTTPBadRequest(reason="the body is a JSON object")
    return found
