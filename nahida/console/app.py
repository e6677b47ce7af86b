"""The console as an aiohttp application: `create_app(memory, config, data_dir)`, its routes and
its static files.

Routes (all under `/admin`; `/` redirects there):

    GET  /admin/login  POST /admin/login  POST /admin/logout
    GET  /admin/  /admin/memory  /admin/items  /admin/review  /admin/people  /admin/chats
         /admin/dreams  /admin/settings
    GET  /admin/api/session  /admin/api/settings  /admin/api/search
    Overview, Chats and Dreams (activity.py): GET /admin/chats/{chat}  /admin/sessions/{id}
         /admin/dreams/{id}, POST /admin/chats/{chat}/dreaming, and their twins under
         /admin/api/ (overview, chats, chats/{chat}, chats/{chat}/sessions, sessions/{id},
         dreams, dreams/{id}, POST chats/{chat}/dreaming)
    GET  /admin/static/console.css  /admin/static/console.js
    items, review, people: GET /admin/items /admin/items/{id} /admin/people/{user}, POST
         /admin/items/{id}/{action} /admin/review/decide /admin/people/{user}/profile; their
         twins under /admin/api/ (items, review, people)

The static files are read once from the package and served from memory: only these names exist,
so no path from a request ever reaches the file system.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import jinja2
from aiohttp import web

from nahida.clock import SYSTEM, Clock
from nahida.config import Config
from nahida.console import activity, api, items, people, review, views
from nahida.console.auth import LoginGuard, PasswordHash, Sessions, TokenFile
from nahida.console.security import MIDDLEWARES, headers, redirect
from nahida.console.settings import Checks, RecentChecks
from nahida.console.state import CONSOLE, Console
from nahida.errors import ConfigError
from nahida.memory import MemoryService

STATIC_TYPES = {".css": "text/css", ".js": "text/javascript"}
STATIC = web.AppKey("static", dict[str, tuple[bytes, str]])
MAX_BODY = 64 * 1024  # bytes: the console's forms and API changes are small


def templates() -> jinja2.Environment:
    """Every template autoescaped: what memory says is text, never markup."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("nahida.console", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def static_files() -> dict[str, tuple[bytes, str]]:
    folder = resources.files("nahida.console").joinpath("static")
    return {
        entry.name: (entry.read_bytes(), STATIC_TYPES[Path(entry.name).suffix])
        for entry in folder.iterdir()
        if Path(entry.name).suffix in STATIC_TYPES
    }


def password_of(config: Config) -> PasswordHash | None:
    """`admin.password_hash`, parsed; ConfigError naming the key when it is no scrypt hash."""
    text = config.admin.password_hash.get_secret_value()
    if not text:
        return None
    try:
        return PasswordHash.parse(text)
    except ValueError as exc:
        raise ConfigError(
            f"{exc}; make one with `nahida admin hash-password`", key="admin.password_hash"
        ) from None


def create_app(
    memory: MemoryService,
    config: Config,
    data_dir: Path,
    *,
    checks: Checks | None = None,
    clock: Clock = SYSTEM,
) -> web.Application:
    """The console over this memory; `checks`: `nahida doctor`'s (the Settings page shows them)."""
    settings = config.admin
    console = Console(
        memory=memory,
        config=config,
        data_dir=data_dir,
        tokens=TokenFile(data_dir),
        password=password_of(config),
        sessions=Sessions(
            lifetime=settings.session_hours * 3600, idle=settings.idle_minutes * 60, clock=clock
        ),
        guard=LoginGuard(clock),
        checks=RecentChecks(checks, clock) if checks is not None else None,
        templates=templates(),
        clock=clock,
    )
    console.tokens.read()  # made on first use: `nahida admin token` prints the same one
    app = web.Application(middlewares=MIDDLEWARES, client_max_size=MAX_BODY)
    app[CONSOLE] = console
    app[STATIC] = static_files()
    app.on_response_prepare.append(headers)
    app.on_startup.append(_check_soon)
    app.on_cleanup.append(_stop_checks)
    add = app.router.add_route
    add("GET", "/", _to_console)
    add("GET", "/admin", _to_console)
    add("GET", "/admin/login", views.login_page)
    add("POST", "/admin/login", views.login)
    add("POST", "/admin/logout", views.logout)
    add("GET", "/admin/static/{name}", _static)
    add("GET", "/admin/memory", views.memory_page)
    add("GET", "/admin/settings", views.settings_page)
    # Items, Review and People, with their answers
    add("GET", "/admin/items", items.items_page)
    add("GET", "/admin/items/{id}", items.item_page)
    add("POST", "/admin/items/{id}/{action}", items.item_action)
    add("GET", "/admin/api/items", items.items_answer)
    add("GET", "/admin/api/items/{id}", items.item_answer)
    add("POST", "/admin/api/items/{id}/{action}", items.item_change)
    add("GET", "/admin/review", review.review_page)
    add("POST", "/admin/review/decide", review.review_decide)
    add("GET", "/admin/api/review", review.review_answer)
    add("POST", "/admin/api/review", review.review_change)
    add("GET", "/admin/people", people.people_page)
    add("GET", "/admin/people/{user}", people.person_page)
    add("POST", "/admin/people/{user}/profile", people.profile_change)
    add("GET", "/admin/api/people", people.people_answer)
    add("GET", "/admin/api/people/{user}", people.person_answer)
    add("POST", "/admin/api/people/{user}/profile", people.profile_answer)
    # Overview, Chats and Dreams, with their answers
    activity.add_routes(app)
    add("GET", "/admin/api/session", api.session)
    add("GET", "/admin/api/settings", api.settings_answer)
    add("GET", "/admin/api/search", api.search_answer)
    return app


async def _check_soon(app: web.Application) -> None:
    """Start the first checkup, so the Overview has its warnings when first shown."""
    if (checks := app[CONSOLE].checks) is not None:
        checks.last()


async def _stop_checks(app: web.Application) -> None:
    if (checks := app[CONSOLE].checks) is not None:
        await checks.close()


async def _to_console(request: web.Request) -> web.StreamResponse:
    return redirect("/admin/")


async def _static(request: web.Request) -> web.StreamResponse:
    found = request.app[STATIC].get(request.match_info["name"])
    if found is None:
        raise web.HTTPNotFound()
    body, content_type = found
    return web.Response(body=body, content_type=content_type, charset="utf-8")
