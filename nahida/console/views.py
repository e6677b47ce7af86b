"""The console's pages: login and logout, the navigation of all eight pages, Memory (recall as a
viewer) and Settings; the pages still to come say so.

Every page is a Jinja2 template rendered with autoescaping on, so memory text is always text;
nothing is marked safe. A page gets `_` (its words in the page's language), the session's CSRF
token (each form sends it back), the navigation and the link that switches the language.
"""

from __future__ import annotations

import re
import secrets
from datetime import datetime
from typing import Any

from aiohttp import web

from nahida.clock import iso
from nahida.console import search, settings
from nahida.console.i18n import t
from nahida.console.security import LOGIN_COOKIE, SESSION_COOKIE, redirect
from nahida.console.state import CONSOLE, SESSION, lang_of

# (key, path): the navigation, in order; `page_<key>` names each
PAGES = (
    ("overview", "/admin/"),
    ("memory", "/admin/memory"),
    ("item", "/admin/items"),
    ("review", "/admin/review"),
    ("people", "/admin/people"),
    ("chats", "/admin/chats"),
    ("dreams", "/admin/dreams"),
    ("settings", "/admin/settings"),
)
LOGIN_PAGE_SECONDS = 3600  # how long a login form stays usable
_SAFE_NEXT = re.compile(r"/admin/[A-Za-z0-9/_\-.?=&%+~:,]*")


def render(
    request: web.Request, template: str, *, current: str = "", status: int = 200, **values: Any
) -> web.Response:
    console = request.app[CONSOLE]
    lang = lang_of(request)
    session = request.get(SESSION)
    other = "en" if lang == "zh" else "zh"
    html = console.templates.get_template(template).render(
        _=lambda key, **v: t(key, lang, **v),
        lang=lang,
        other_lang=other,
        switch=str(request.rel_url.update_query(lang=other)),
        csrf=session.csrf if session is not None else None,
        pages=PAGES,
        current=current,
        **values,
    )
    return web.Response(text=html, status=status, content_type="text/html", charset="utf-8")


def safe_next(value: str | None) -> str:
    """Where to go after logging in: a path inside the console, never another site."""
    if value and _SAFE_NEXT.fullmatch(value) and "//" not in value and "/." not in value:
        return value
    return "/admin/"


# login and logout -----------------------------------------------------------------------------


async def login_page(request: web.Request) -> web.StreamResponse:
    console = request.app[CONSOLE]
    if console.sessions.get(request.cookies.get(SESSION_COOKIE), console.tokens.fingerprint()):
        return redirect(safe_next(request.query.get("next")))
    notice = "logged_out" if "bye" in request.query else None
    return login_form(request, notice=notice)


def login_form(
    request: web.Request,
    *,
    error: str | None = None,
    notice: str | None = None,
    status: int = 200,
    next_page: str | None = None,
) -> web.Response:
    """The login form, with a fresh CSRF token in it and in its cookie; `next_page`: where a
    login goes (else the query's `next`)."""
    token = secrets.token_urlsafe(32)
    response = render(
        request,
        "login.html",
        current="login",
        status=status,
        login_csrf=token,
        next=safe_next(next_page or request.query.get("next")),
        error=error,
        notice=notice,
    )
    response.set_cookie(
        LOGIN_COOKIE,
        token,
        path="/admin/login",
        httponly=True,
        samesite="Strict",
        secure=request.secure,
        max_age=LOGIN_PAGE_SECONDS,
    )
    return response


async def login(request: web.Request) -> web.StreamResponse:
    console = request.app[CONSOLE]
    lang = lang_of(request)
    form = await request.post()
    target = form.get("next")
    next_page = safe_next(target if isinstance(target, str) else None)
    address = request.remote or "unknown"
    wait = console.guard.retry_after(address)
    if wait > 0:
        seconds = int(wait) + 1
        error = t("login_limited", lang, seconds=seconds)
        response = login_form(request, error=error, status=429, next_page=next_page)
        response.headers["Retry-After"] = str(seconds)
        return response
    secret = form.get("secret")
    if not isinstance(secret, str) or not secret or not await console.accepts(secret):
        console.guard.failed(address)
        error = t("login_wrong", lang)
        return login_form(request, error=error, status=401, next_page=next_page)
    session = console.sessions.start(console.tokens.fingerprint())
    response = redirect(next_page)
    response.set_cookie(
        SESSION_COOKIE,
        session.id,
        path="/admin",
        httponly=True,
        samesite="Strict",
        secure=request.secure,
    )
    response.del_cookie(LOGIN_COOKIE, path="/admin/login")
    return response


async def logout(request: web.Request) -> web.StreamResponse:
    request.app[CONSOLE].sessions.end(request[SESSION].id)
    response = redirect("/admin/login?bye=1")
    response.del_cookie(SESSION_COOKIE, path="/admin")
    return response


# pages ----------------------------------------------------------------------------------------


async def memory_page(request: web.Request) -> web.StreamResponse:
    console = request.app[CONSOLE]
    lang = lang_of(request)
    fields = {k: request.query.get(k, "") for k in ("chat", "user", "q", "limit")}
    found = error = None
    try:
        question = search.Question.read(fields)
        if question is not None:
            found = await search.search(console.memory, question)
    except ValueError as exc:
        error = t("search_bad", lang, error=str(exc))
    zone = console.config.bot.zone()

    def when(epoch: float) -> str:
        return f"{datetime.fromtimestamp(epoch, zone):%Y-%m-%d %H:%M}"

    return render(
        request,
        "memory.html",
        current="memory",
        status=400 if error else 200,
        fields=fields,
        found=found,
        error=error,
        when=when,
        iso=iso,
        limit=search.LIMIT,
        max_limit=search.MAX_LIMIT,
    )


async def settings_page(request: web.Request) -> web.StreamResponse:
    console = request.app[CONSOLE]
    mask = settings.masker(console.config, [console.tokens.read()])
    checkup = await console.checks.fresh() if console.checks is not None else None
    return render(
        request,
        "settings.html",
        current="settings",
        config_yaml=settings.as_yaml(settings.config_shown(console.config, mask)),
        checks=settings.lines(checkup, mask) if checkup is not None else None,
        ok=bool(checkup.report.get("ok")) if checkup is not None else None,
    )
