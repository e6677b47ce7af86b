"""The JSON API under `/admin/api/` (docs/console.md): what the pages show, as data.

Every answer is JSON, errors too (`{"error": …}`); a change must carry the session's CSRF token
in `X-CSRF-Token` (`GET /admin/api/session` gives it). Shapes are shared with the CLI's `--json`:
a search answers as `nahida memory search --json` prints, the settings as `nahida doctor --json`.
"""

from __future__ import annotations

import json

from aiohttp import web

from nahida.console import search, settings
from nahida.console.security import api_error
from nahida.console.state import CONSOLE, SESSION, lang_of


async def session(request: web.Request) -> web.StreamResponse:
    """Who is logged in, as far as the console knows: the CSRF token changes need, the language,
    and the seconds the session has left at most."""
    console = request.app[CONSOLE]
    current = request[SESSION]
    left = console.sessions.lifetime - (console.clock.monotonic() - current.started)
    return web.json_response(
        {
            "csrf_token": current.csrf,
            "language": lang_of(request),
            "expires_in": round(max(0.0, left)),
            "idle_timeout": round(console.sessions.idle),
        }
    )


async def settings_answer(request: web.Request) -> web.StreamResponse:
    console = request.app[CONSOLE]
    mask = settings.masker(console.config, [console.tokens.read()])
    checkup = await console.checks.fresh() if console.checks is not None else None
    return web.json_response(settings.answer(console.config, mask, checkup), dumps=_dumps)


async def search_answer(request: web.Request) -> web.StreamResponse:
    """`?chat=&user=&q=&limit=`: recall as that person in that chat."""
    console = request.app[CONSOLE]
    try:
        question = search.Question.read(request.query)
    except ValueError as exc:
        return api_error(400, str(exc))
    if question is None:
        return api_error(400, "chat and q are needed")
    found = await search.search(console.memory, question)
    return web.json_response(found.to_json(), dumps=_dumps)


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
