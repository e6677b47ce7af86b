"""The People pages: everyone the bot knows (names, chats, last seen), and a person's page with
their names, profile sections each editable in place, behavioural rules, items and episodes.
`/admin/api/people…` are the twins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from nahida.console.i18n import t
from nahida.console.pages import ACTOR, answer, body_of, paging, when_of
from nahida.console.state import CONSOLE, lang_of
from nahida.console.views import render
from nahida.errors import MemoryPermissionError
from nahida.memory import PROFILE_SECTIONS

PAGE = 20  # a person's items and episodes, a page at a time


async def people_page(request: web.Request) -> web.StreamResponse:
    try:
        offset, limit = paging(request.query)
    except ValueError:
        raise web.HTTPBadRequest(reason="offset and limit are counts") from None
    found = await request.app[CONSOLE].memory.admin.people(offset=offset, limit=limit)
    return render(
        request,
        "people.html",
        current="people",
        found=found,
        when=when_of(request),
        more_url=lambda at: str(request.rel_url.update_query(offset=at)),
    )


async def person_of(request: web.Request, query: Mapping[str, str]) -> dict[str, Any]:
    """A person's page and the pages of their items and episodes the query asks for."""
    admin = request.app[CONSOLE].memory.admin
    user = request.match_info["user"]
    found = await admin.person(user)
    if found is None:
        raise web.HTTPNotFound()
    items_at = max(0, int(query.get("items") or 0))
    episodes_at = max(0, int(query.get("episodes") or 0))
    items = await admin.items(person=found.person.user, offset=items_at, limit=PAGE)
    episodes = await admin.episodes(person=found.person.user, offset=episodes_at, limit=PAGE)
    return {"page": found, "items": items, "episodes": episodes}


async def person_view(
    request: web.Request, *, error: str | None = None, status: int = 200
) -> web.StreamResponse:
    try:
        values = await person_of(request, request.query)
    except ValueError:
        raise web.HTTPBadRequest(reason="items and episodes are counts") from None
    sections = {s: [e for e in values["page"].profile if e.section == s] for s in PROFILE_SECTIONS}
    return render(
        request,
        "person.html",
        current="people",
        status=status,
        error=error,
        done=request.query.get("done"),
        sections=sections,
        when=when_of(request),
        at=lambda name, offset: str(request.rel_url.update_query({name: offset})),
        **values,
    )


async def person_page(request: web.Request) -> web.StreamResponse:
    return await person_view(request)


async def rewrite(request: web.Request, fields: Mapping[str, Any]) -> None:
    """A section's bullets in place of its own, as the console; then the person's file follows.
    Raises ValueError and MemoryPermissionError as `rewrite_section` does."""
    memory = request.app[CONSOLE].memory
    section, text = fields.get("section"), fields.get("text")
    sensitivity = fields.get("sensitivity") or "private"
    if not isinstance(section, str) or not isinstance(text, str):
        raise ValueError("name a section and its text")
    user = request.match_info["user"]
    await memory.profiles.rewrite_section(
        user, section, text, actor=ACTOR, sensitivity=str(sensitivity)
    )
    if memory.markdown is not None:
        await memory.markdown.sync(people=[user])  # the person's file shows the section at once


async def profile_change(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    lang = lang_of(request)
    try:
        await rewrite(request, form)
    except (ValueError, MemoryPermissionError) as exc:
        return await person_view(request, error=t("refused", lang, error=exc), status=400)
    raise web.HTTPSeeOther(f"{request.path.rsplit('/', 1)[0]}?done=profile")


# the JSON twins -------------------------------------------------------------------------------


async def people_answer(request: web.Request) -> web.StreamResponse:
    try:
        offset, limit = paging(request.query)
    except ValueError as exc:
        return answer({"error": str(exc)}, 400)
    found = await request.app[CONSOLE].memory.admin.people(offset=offset, limit=limit)
    return answer(found.to_json())


async def person_answer(request: web.Request) -> web.StreamResponse:
    try:
        values = await person_of(request, request.query)
    except web.HTTPNotFound:
        return answer({"error": "no such person"}, 404)
    except ValueError as exc:
        return answer({"error": str(exc)}, 400)
    data = values["page"].to_json()
    data["items"] = values["items"].to_json()
    data["episodes"] = values["episodes"].to_json()
    return answer(data)


async def profile_answer(request: web.Request) -> web.StreamResponse:
    """POST `{"section": …, "text": …, "sensitivity": …}`: rewrite one profile section."""
    try:
        await rewrite(request, await body_of(request))
    except (ValueError, MemoryPermissionError) as exc:
        return answer({"error": str(exc)}, 400)
    return answer({"ok": True})
