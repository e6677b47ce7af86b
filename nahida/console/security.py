"""What every request passes through: headers, the language, the login gate and the CSRF check.

- Every answer (pages, the API, static files, errors, redirects) carries a Content-Security-Policy
  that allows only the console's own script and style files, and `nosniff`, `no-referrer`,
  `DENY` framing; pages and the API are `no-store`.
- Without a live session, pages redirect to `/admin/login` and `/admin/api/*` answers 401 JSON;
  only the login page and the static files answer anyone.
- Every POST, PUT, PATCH and DELETE must come from the console's own pages: a cross-site
  `Sec-Fetch-Site` or an `Origin` of another host is refused, and the session's CSRF token must
  come back in the `X-CSRF-Token` header (the API) or the `csrf` form field (the pages); a login
  carries the token of its login page's cookie instead. A refusal is 403.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import structlog
from aiohttp import web
from yarl import URL

from nahida.console.auth import constant_equal
from nahida.console.i18n import language, t
from nahida.console.state import CONSOLE, LANG, SESSION

log = structlog.get_logger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

SESSION_COOKIE = "nahida_session"
LOGIN_COOKIE = "nahida_login"  # the login page's CSRF token, before there is a session
LANG_COOKIE = "nahida_lang"
CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
    " object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
STATIC = re.compile(r"/admin/static/[a-z]+\.(css|js)")
LOGIN = "/admin/login"


def in_console(path: str) -> bool:
    return path == "/admin" or path.startswith("/admin/")


def is_api(path: str) -> bool:
    return path.startswith("/admin/api/")


def is_public(path: str) -> bool:
    """What answers without a session: the login page and the static files."""
    return path == LOGIN or STATIC.fullmatch(path) is not None


async def headers(request: web.Request, response: web.StreamResponse) -> None:
    """The security headers, on every answer the console's server gives."""
    response.headers.update(HEADERS)
    static = STATIC.fullmatch(request.path) is not None and response.status == 200
    response.headers["Cache-Control"] = "no-cache" if static else "no-store"


def redirect(location: str) -> web.Response:
    """303 See Other: a returned answer (its cookies go with it)."""
    return web.Response(status=303, headers={"Location": location})


def api_error(status: int, error: str, **extra: Any) -> web.Response:
    return web.json_response({"error": error, **extra}, status=status)


@web.middleware
async def errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The API answers JSON even when it fails; pages keep aiohttp's plain answers."""
    if not is_api(request.path):
        return await handler(request)
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return api_error(exc.status, exc.reason.lower())
    except Exception:
        log.exception("console_api_failed", path=request.path)
        return api_error(500, "internal error")


@web.middleware
async def choose_language(request: web.Request, handler: Handler) -> web.StreamResponse:
    """`?lang=en` switches (a cookie keeps it) and redirects to the same page without it."""
    console = request.app[CONSOLE]
    chosen = language(request.query.get("lang"))
    if chosen is not None and request.method == "GET" and not is_api(request.path):
        target = redirect(str(request.rel_url.without_query_params("lang")))
        target.set_cookie(LANG_COOKIE, chosen, path="/admin", httponly=True, samesite="Strict")
        return target
    request[LANG] = (
        language(request.cookies.get(LANG_COOKIE))
        or console.config.admin.language
        or console.config.bot.language
    )
    return await handler(request)


@web.middleware
async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
    """No page or API answers without a live session."""
    path = request.path
    if not in_console(path) or is_public(path):
        return await handler(request)
    console = request.app[CONSOLE]
    session = console.sessions.get(
        request.cookies.get(SESSION_COOKIE), console.tokens.fingerprint()
    )
    if session is None:
        if is_api(path):
            return api_error(401, "login required", login=LOGIN)
        target = URL(LOGIN)
        if request.method == "GET" and path not in ("/admin", "/admin/"):
            target = target.with_query(next=str(request.rel_url))
        return redirect(str(target))
    request[SESSION] = session
    return await handler(request)


def cross_site(request: web.Request) -> bool:
    """Whether the browser says the request came from another site: `Sec-Fetch-Site`, or an
    `Origin` naming another host (`null` says nothing: the pages' own no-referrer policy makes
    their forms send it)."""
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site not in ("same-origin", "none"):
        return True
    origin = request.headers.get("Origin")
    if origin is None or origin == "null":
        return False
    return urlsplit(origin).netloc.lower() != request.host.lower()


async def _given_token(request: web.Request) -> str:
    header = request.headers.get(CSRF_HEADER)
    if header is not None:
        return header
    if request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        value = (await request.post()).get(CSRF_FIELD)
        return value if isinstance(value, str) else ""
    return ""


def refused(request: web.Request) -> web.Response:
    if is_api(request.path):
        return api_error(403, "csrf check failed")
    text = t("csrf_refused", request.get(LANG, "zh"))
    return web.Response(status=403, text=text, content_type="text/plain")


@web.middleware
async def csrf(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every change carries the session's CSRF token and comes from the console's own pages."""
    if request.method not in UNSAFE_METHODS:
        return await handler(request)
    session = request.get(SESSION)
    if session is not None:
        expected = session.csrf
    elif request.path == LOGIN:
        expected = request.cookies.get(LOGIN_COOKIE, "")
    else:
        expected = ""
    given = await _given_token(request)
    if cross_site(request) or not expected or not given or not constant_equal(given, expected):
        log.warning("console_csrf_refused", path=request.path, method=request.method)
        return refused(request)
    return await handler(request)


MIDDLEWARES = (errors, choose_language, authenticate, csrf)
