"""The console's pages of activity: Overview (counts, the last days as charts, warnings), Chats
(a chat, its sessions, rules and dreaming, a session's transcript with its recalls) and Dreams
(runs and a run's proposals), each with its JSON twin under `/admin/api/`.

Every listing is a page at a time (`?offset=&limit=`); the JSON shapes are `memory.admin`'s
`to_json()`. Steering dreaming acts as `Actor.console()`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import quote

import structlog
from aiohttp import web

from nahida.console import charts, settings
from nahida.console.security import api_error, redirect
from nahida.console.state import CONSOLE
from nahida.console.views import render
from nahida.memory import SOURCE_FAMILIES, Actor, Page

log = structlog.get_logger(__name__)
DAYS = 14  # days the Overview's charts cover
PAGE = 50  # rows of a listing's page
TRANSCRIPT_PAGE = 100  # turns of a transcript's page
DREAM_FATES = ("applied", "pending", "rejected")
FAMILIES = (*SOURCE_FAMILIES, "other")  # the source families a day's additions are counted in
# the embedding backlog as the Overview names it, and the doctor's report's name of each
BACKLOG = {"stored": "stored", "pending": "pending", "other": "other_models", "skipped": "skipped"}
RUNNING = web.AppKey("dream_tasks", set[asyncio.Task[Any]])  # runs started by the console


def paging(request: web.Request, size: int = PAGE) -> tuple[int, int]:
    """`?offset=&limit=` of a listing, defaults for what is missing; HTTP 400 for nonsense."""
    try:
        offset = int(request.query.get("offset", "0"))
        limit = int(request.query.get("limit", str(size)))
    except ValueError:
        raise web.HTTPBadRequest(text="offset and limit are whole numbers") from None
    if offset < 0 or limit < 1:
        raise web.HTTPBadRequest(text="offset >= 0 and limit >= 1")
    return offset, min(limit, 500)


def chat_url(chat: str) -> str:
    """A chat's page; its key quoted whole, since keys hold ':'."""
    return "/admin/chats/" + quote(chat, safe="")


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _json(value: Any) -> web.Response:
    return web.json_response(value, dumps=_dumps)


def _when(request: web.Request) -> Any:
    zone = request.app[CONSOLE].config.bot.zone()

    def when(epoch: float | datetime | None) -> str:
        if epoch is None:
            return ""
        moment = epoch if isinstance(epoch, datetime) else datetime.fromtimestamp(epoch)
        return f"{moment.astimezone(zone):%Y-%m-%d %H:%M}"

    return when


# overview -------------------------------------------------------------------------------------


def _checked(request: web.Request) -> dict[str, Any]:
    """What the Overview shows of the doctor's last checkup (none yet: nothing; a stale one:
    the checks run again for later): the lines worth a look (marked `--`), masked as Settings
    shows them, and the embedding backlog it counted (None: recall by meaning is off, or the
    checks have not counted it yet), so counting every searchable row is never a page's work."""
    console = request.app[CONSOLE]
    checkup = console.checks.last() if console.checks is not None else None
    if checkup is None:
        return {"warnings": [], "backlog": None, "embedding_off": False}
    mask = settings.masker(console.config, [console.tokens.read()])
    embedding = checkup.report.get("embedding") or {}
    counted = "stored" in embedding
    return {
        "warnings": [line for line in settings.lines(checkup, mask) if line.startswith("--")],
        "backlog": {k: embedding.get(v, 0) for k, v in BACKLOG.items()} if counted else None,
        "embedding_off": "model" in embedding and embedding["model"] is None,
    }


async def _overview_data(request: web.Request) -> dict[str, Any]:
    admin = request.app[CONSOLE].memory.admin
    return {
        "overview": await admin.overview(),
        "series": await admin.series(DAYS),
        **_checked(request),
    }


def overview_charts(series: Any) -> dict[str, charts.Chart]:
    days = [(d.day.isoformat(), d) for d in series.days]
    return {
        "added": charts.stacked([(k, d.added) for k, d in days], FAMILIES),
        "recalls": charts.stacked([(k, {"hits": d.recall_hits}) for k, d in days], ("hits",)),
        "dreams": charts.stacked(
            [(k, {f: getattr(d, f) for f in DREAM_FATES}) for k, d in days], DREAM_FATES
        ),
    }


async def overview_page(request: web.Request) -> web.StreamResponse:
    data = await _overview_data(request)
    return render(
        request,
        "overview.html",
        current="overview",
        charts=overview_charts(data["series"]),
        families=FAMILIES,
        fates=DREAM_FATES,
        when=_when(request),
        **data,
    )


async def overview_answer(request: web.Request) -> web.StreamResponse:
    data = await _overview_data(request)
    return _json(
        {
            "overview": data["overview"].to_json(),
            "series": data["series"].to_json(),
            "backlog": data["backlog"],
            "warnings": data["warnings"],
        }
    )


# chats ----------------------------------------------------------------------------------------


async def chats_page(request: web.Request) -> web.StreamResponse:
    offset, limit = paging(request)
    found = await request.app[CONSOLE].memory.admin.chats(offset=offset, limit=limit)
    return render(
        request, "chats.html", current="chats", found=found, chat_url=chat_url, when=_when(request)
    )


async def chats_answer(request: web.Request) -> web.StreamResponse:
    offset, limit = paging(request)
    return _json(
        (await request.app[CONSOLE].memory.admin.chats(offset=offset, limit=limit)).to_json()
    )


async def chat_page(request: web.Request) -> web.StreamResponse:
    console = request.app[CONSOLE]
    chat = request.match_info["chat"]
    offset, limit = paging(request)
    found = await console.memory.admin.chat(chat)
    if found is None:
        raise web.HTTPNotFound(text=f"no chat {chat}")
    sessions = await console.memory.admin.sessions(chat, offset=offset, limit=limit)
    return render(
        request,
        "chat.html",
        current="chats",
        found=found,
        sessions=sessions,
        chat_url=chat_url,
        quote=quote,
        when=_when(request),
        dreaming=console.memory.dreams.enabled,
        done=request.query.get("done", ""),
    )


async def chat_answer(request: web.Request) -> web.StreamResponse:
    found = await request.app[CONSOLE].memory.admin.chat(request.match_info["chat"])
    if found is None:
        return api_error(404, "no such chat")
    return _json(found.to_json())


async def sessions_answer(request: web.Request) -> web.StreamResponse:
    offset, limit = paging(request)
    chat = request.match_info["chat"]
    found = await request.app[CONSOLE].memory.admin.sessions(chat, offset=offset, limit=limit)
    return _json(found.to_json())


async def _steer(request: web.Request, action: str) -> str:
    """Pause, resume or start a run of the chat's dreaming as the console; what was done."""
    console = request.app[CONSOLE]
    chat = request.match_info["chat"]
    dreams = console.memory.dreams
    actor = Actor.console()
    if action == "pause":
        await dreams.pause(chat, actor=actor)
        return "paused"
    if action == "resume":
        await dreams.resume(chat, actor=actor)
        return "resumed"
    if action != "run":
        raise web.HTTPBadRequest(text="action is pause, resume or run")
    if not dreams.enabled:
        return "no_model"
    # a run calls the model for a while: it goes on after this answer, kept referenced here
    task = asyncio.create_task(dreams.run(chat, "console", actor=actor))
    tasks = request.app[RUNNING]
    tasks.add(task)
    task.add_done_callback(_finished(tasks))
    return "started"


def _finished(tasks: set[asyncio.Task[Any]]) -> Any:
    def done(task: asyncio.Task[Any]) -> None:
        tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("console_dream_failed", error=repr(task.exception()))

    return done


async def steer(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    action = form.get("action")
    done = await _steer(request, action if isinstance(action, str) else "")
    return redirect(f"{chat_url(request.match_info['chat'])}?done={done}")


async def steer_answer(request: web.Request) -> web.StreamResponse:
    try:
        body = await request.json()
    except ValueError:
        return api_error(400, "a JSON body with action: pause, resume or run")
    action = body.get("action") if isinstance(body, Mapping) else None
    try:
        done = await _steer(request, action if isinstance(action, str) else "")
    except web.HTTPBadRequest:
        return api_error(400, "action is pause, resume or run")
    return _json({"chat": request.match_info["chat"], "done": done})


# transcripts ----------------------------------------------------------------------------------


async def _recalled(request: web.Request, transcript: Any) -> dict[str, Any]:
    """The items the page's recalls name, by id, to show their words beside each turn."""
    items = request.app[CONSOLE].memory.items
    wanted = {i for row in transcript.turns.rows if row.recall for i in row.recall.items}
    found = {}
    for item_id in sorted(wanted):
        item = await items.get(item_id)
        if item is not None:
            found[item_id] = item
    return found


async def session_page(request: web.Request) -> web.StreamResponse:
    offset, limit = paging(request, TRANSCRIPT_PAGE)
    admin = request.app[CONSOLE].memory.admin
    found = await admin.transcript(request.match_info["id"], offset=offset, limit=limit)
    if found is None:
        raise web.HTTPNotFound(text="no such session")
    return render(
        request,
        "transcript.html",
        current="chats",
        found=found,
        recalled=await _recalled(request, found),
        chat_url=chat_url,
        when=_when(request),
    )


async def session_answer(request: web.Request) -> web.StreamResponse:
    offset, limit = paging(request, TRANSCRIPT_PAGE)
    admin = request.app[CONSOLE].memory.admin
    found = await admin.transcript(request.match_info["id"], offset=offset, limit=limit)
    if found is None:
        return api_error(404, "no such session")
    return _json(found.to_json())


# dreams ---------------------------------------------------------------------------------------


async def dreams_page(request: web.Request) -> web.StreamResponse:
    offset, limit = paging(request)
    chat = request.query.get("chat") or None
    found = await request.app[CONSOLE].memory.admin.dreams(chat=chat, offset=offset, limit=limit)
    return render(
        request,
        "dreams.html",
        current="dreams",
        found=found,
        chat=chat,
        chat_url=chat_url,
        quote=quote,
        when=_when(request),
    )


async def dreams_answer(request: web.Request) -> web.StreamResponse:
    offset, limit = paging(request)
    chat = request.query.get("chat") or None
    found = await request.app[CONSOLE].memory.admin.dreams(chat=chat, offset=offset, limit=limit)
    return _json(found.to_json())


async def dream_page(request: web.Request) -> web.StreamResponse:
    found = await request.app[CONSOLE].memory.admin.dream(request.match_info["id"])
    if found is None:
        raise web.HTTPNotFound(text="no such dream run")
    return render(
        request, "dream.html", current="dreams", run=found, chat_url=chat_url, when=_when(request)
    )


async def dream_answer(request: web.Request) -> web.StreamResponse:
    found = await request.app[CONSOLE].memory.admin.dream(request.match_info["id"])
    if found is None:
        return api_error(404, "no such dream run")
    # a page of one: the admin's JSON of a run, its error redacted
    return _json(Page((found,), 1, 0, 1).to_json()["rows"][0])


async def _stop_runs(app: web.Application) -> None:
    """Cancel the runs still going when the console stops: memory closes right after."""
    running: list[asyncio.Task[Any]] = [*app[RUNNING]]
    for task in running:
        task.cancel()
    await asyncio.gather(*running, return_exceptions=True)


def add_routes(app: web.Application) -> None:
    """This module's pages and answers, and the set its background runs are kept in."""
    app[RUNNING] = set()
    app.on_cleanup.append(_stop_runs)
    add = app.router.add_route
    add("GET", "/admin/", overview_page)
    add("GET", "/admin/chats", chats_page)
    add("GET", "/admin/chats/{chat}", chat_page)
    add("POST", "/admin/chats/{chat}/dreaming", steer)
    add("GET", "/admin/sessions/{id}", session_page)
    add("GET", "/admin/dreams", dreams_page)
    add("GET", "/admin/dreams/{id}", dream_page)
    add("GET", "/admin/api/overview", overview_answer)
    add("GET", "/admin/api/chats", chats_answer)
    add("GET", "/admin/api/chats/{chat}", chat_answer)
    add("GET", "/admin/api/chats/{chat}/sessions", sessions_answer)
    add("POST", "/admin/api/chats/{chat}/dreaming", steer_answer)
    add("GET", "/admin/api/sessions/{id}", session_answer)
    add("GET", "/admin/api/dreams", dreams_answer)
    add("GET", "/admin/api/dreams/{id}", dream_answer)
