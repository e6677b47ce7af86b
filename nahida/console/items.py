"""The Items pages: a filtered listing of memory, one item in full (who sees it, where it came
from, every change, what it replaced), and its corrections: edit, change kind/scope/sensitivity,
forget, restore and purge. Each form posts and redirects (PRG); `/admin/api/items…` are twins.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from aiohttp import web

from nahida.console.i18n import t
from nahida.console.pages import ACTOR, answer, body_of, paging, text_field, when_of
from nahida.console.state import CONSOLE, lang_of
from nahida.console.views import render
from nahida.errors import MemoryPermissionError
from nahida.memory import KINDS, SOURCE_FAMILIES

FILTERS = ("scope", "kind", "status", "source", "since", "until", "text")
ACTIONS = ("edit", "change", "forget", "restore", "purge")
# the filter's choices, as `memory.admin.items` takes them (it refuses others with the reason)
SCOPE_FAMILIES = ("global", "chat", "user")
STATUSES = ("active", "archived", "superseded", "rejected")


def _day(value: str | None) -> date | None:
    return date.fromisoformat(value) if value else None


async def listing(request: web.Request, query: Mapping[str, str]) -> Any:
    """The page of items the query's filters and paging ask for; ValueError for a bad one."""
    offset, limit = paging(query)
    fields = {k: (query.get(k) or "").strip() or None for k in FILTERS}
    return await request.app[CONSOLE].memory.admin.items(
        scope=fields["scope"],
        kind=fields["kind"],
        status=fields["status"],
        source=fields["source"],
        since=_day(fields["since"]),
        until=_day(fields["until"]),
        text=fields["text"],
        offset=offset,
        limit=limit,
    )


async def items_page(request: web.Request) -> web.StreamResponse:
    lang = lang_of(request)
    fields = {k: request.query.get(k, "") for k in FILTERS}
    found = error = None
    try:
        found = await listing(request, request.query)
    except ValueError as exc:
        error = t("items_bad", lang, error=str(exc))
    return render(
        request,
        "items.html",
        current="item",
        status=400 if error else 200,
        fields=fields,
        found=found,
        error=error,
        when=when_of(request),
        families=SCOPE_FAMILIES,
        kinds=KINDS,
        statuses=STATUSES,
        sources=tuple(SOURCE_FAMILIES),
        purged=request.query.get("purged"),
        more_url=lambda offset: str(request.rel_url.update_query(offset=offset)),
    )


async def item_view(
    request: web.Request, item_id: str, *, error: str | None = None, status: int = 200
) -> web.StreamResponse:
    found = await request.app[CONSOLE].memory.admin.item(item_id)
    if found is None:
        raise web.HTTPNotFound()
    return render(
        request,
        "item.html",
        current="item",
        status=status,
        page=found,
        error=error,
        done=request.query.get("done"),
        when=when_of(request),
        kinds=KINDS,
    )


async def item_page(request: web.Request) -> web.StreamResponse:
    return await item_view(request, request.match_info["id"])


async def act(request: web.Request, item_id: str, action: str, form: Mapping[str, Any]) -> str:
    """Do one correction as the console; the id of the item to show next ("" after a purge).
    Raises LookupError, ValueError and MemoryPermissionError as the memory's actions do."""
    memory = request.app[CONSOLE].memory
    items = memory.items
    if action == "edit":
        text = text_field(form, "text") or ""
        result = await items.edit(item_id, text, ACTOR)
        if result.outcome not in ("created", "superseded", "merged", "updated"):
            raise ValueError(result.reason or result.outcome)
        return result.item_id or item_id
    if action == "change":
        item = await items.get(item_id)
        if item is None:
            raise LookupError(item_id)
        wanted = {k: text_field(form, k) for k in ("kind", "scope", "sensitivity")}
        now = {"kind": item.kind, "scope": item.scope, "sensitivity": item.sensitivity}
        changes = {k: v for k, v in wanted.items() if v is not None and v != now[k]}
        await items.change(item_id, ACTOR, **changes)
        return item_id
    if action == "forget":
        await items.forget(item_id, ACTOR, "forgotten in the console")
        return item_id
    if action == "restore":
        await items.restore(item_id, ACTOR, "restored in the console")
        return item_id
    if action == "purge":
        if text_field(form, "confirm") != item_id:
            raise ValueError("type the item's id to purge it")
        await items.purge(item_id, ACTOR, "purged in the console")
        if memory.markdown is not None:
            await memory.markdown.sync()  # MEMORY.md drops its words at once
        return ""
    raise web.HTTPNotFound()


async def item_action(request: web.Request) -> web.StreamResponse:
    item_id = request.match_info["id"]
    action = request.match_info["action"]
    if action not in ACTIONS:
        raise web.HTTPNotFound()
    form = await request.post()
    lang = lang_of(request)
    try:
        shown = await act(request, item_id, action, form)
    except LookupError:
        return await item_view(request, item_id, error=t("item_gone", lang), status=404)
    except MemoryPermissionError as exc:
        return await item_view(request, item_id, error=t("refused", lang, error=exc), status=403)
    except ValueError as exc:
        return await item_view(request, item_id, error=t("refused", lang, error=exc), status=400)
    if not shown:
        raise web.HTTPSeeOther(f"/admin/items?purged={item_id}")
    raise web.HTTPSeeOther(f"/admin/items/{shown}?done={action}")


# the JSON twins -------------------------------------------------------------------------------


async def items_answer(request: web.Request) -> web.StreamResponse:
    try:
        found = await listing(request, request.query)
    except ValueError as exc:
        return answer({"error": str(exc)}, 400)
    return answer(found.to_json())


async def item_answer(request: web.Request) -> web.StreamResponse:
    found = await request.app[CONSOLE].memory.admin.item(request.match_info["id"])
    if found is None:
        return answer({"error": "no such item"}, 404)
    return answer(found.to_json())


async def item_change(request: web.Request) -> web.StreamResponse:
    """POST `{…}` to `/admin/api/items/{id}/{action}`: the form's fields as JSON."""
    item_id = request.match_info["id"]
    action = request.match_info["action"]
    if action not in ACTIONS:
        return answer({"error": f"an action is one of {', '.join(ACTIONS)}"}, 404)
    body = await body_of(request)
    try:
        shown = await act(request, item_id, action, body)
    except LookupError:
        return answer({"error": "no such item"}, 404)
    except MemoryPermissionError as exc:
        return answer({"error": str(exc)}, 403)
    except ValueError as exc:
        return answer({"error": str(exc)}, 400)
    return answer({"ok": True, "action": action, "item_id": shown or None})
