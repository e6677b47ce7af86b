"""The console's security rules, each with a test: the login gate on every route, CSRF on every
change, the login limit on virtual time, the cookie's flags, the headers on every answer, memory
text rendered as text, and secrets never shown."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from nahida.console.auth import LOGIN_FAILURES, LOGIN_WINDOW, TokenFile
from nahida.console.security import CSP
from tests.console_data import GROUP, HOSTILE, SECRETS
from tests.integration.console_client import PASSWORD, PASSWORD_HASH, Console, console_client

UNSAFE = ("POST", "PUT", "PATCH", "DELETE")


@pytest.fixture
async def console(tmp_path: Path) -> AsyncIterator[Console]:
    async for made in console_client(tmp_path):
        yield made


def routes(console: Console) -> list[tuple[str, str]]:
    """(method, path) of every route the console has, a sample path for a dynamic one."""
    app = console.client.app
    assert app is not None
    found = []
    for resource in app.router.resources():
        info = resource.get_info()
        path = info.get("path") or info.get("formatter", "").replace("{name}", "console.css")
        found.extend((route.method, path) for route in resource)
    return found


def page_routes(console: Console) -> list[str]:
    public = {"/", "/admin/login", "/admin/static/console.css"}
    return [path for method, path in routes(console) if method == "GET" and path not in public]


async def test_no_page_or_api_answers_without_a_session(console: Console) -> None:
    pages = page_routes(console)
    assert {"/admin/", "/admin/memory", "/admin/settings", "/admin/api/search"} <= set(pages)
    for path in [*pages, "/admin/no-such-page", "/admin/api/no-such-thing"]:
        answer = await console.client.get(path, allow_redirects=False)
        if path.startswith("/admin/api/"):
            assert answer.status == 401, path
            assert await answer.json() == {"error": "login required", "login": "/admin/login"}
        else:
            assert answer.status == 303, path
            assert answer.headers["Location"].startswith("/admin/login"), path
    answer = await console.client.get("/admin/memory?chat=x", allow_redirects=False)
    assert answer.headers["Location"] == "/admin/login?next=/admin/memory?chat%3Dx"


async def test_every_change_needs_the_sessions_csrf_token(console: Console) -> None:
    csrf = await console.login()
    changes = [(m, p) for m, p in routes(console) if m in UNSAFE]
    # every unsafe method on every path is checked, also where no route takes it
    changes += [(m, p) for p in page_routes(console) for m in UNSAFE]
    assert ("POST", "/admin/logout") in changes
    for method, path in changes:
        for headers, form in (
            ({}, {}),
            ({"X-CSRF-Token": "forged"}, {}),
            ({}, {"csrf": "forged"}),
            ({"X-CSRF-Token": csrf, "Origin": "http://evil.example"}, {}),
            ({"X-CSRF-Token": csrf, "Sec-Fetch-Site": "cross-site"}, {}),
            ({"Origin": "http://evil.example", "Sec-Fetch-Site": "same-origin"}, {"csrf": csrf}),
        ):
            answer = await console.client.request(
                method, path, headers=headers, data=form or None, allow_redirects=False
            )
            assert answer.status == 403, (method, path, headers, form)
    assert (await console.client.get("/admin/api/session")).status == 200  # still logged in
    # a form of the console's own: Origin null (its no-referrer policy), or its own origin
    same = {"Sec-Fetch-Site": "same-origin", "Origin": "null"}
    answer = await console.client.post(
        "/admin/api/logout-nowhere", data={"csrf": csrf}, headers=same
    )
    assert answer.status == 404  # through the CSRF check, to no route
    here = str(console.client.make_url("/")).rstrip("/")
    same = {"Sec-Fetch-Site": "same-origin", "Origin": here}
    answer = await console.client.post("/admin/logout", data={"csrf": csrf}, headers=same)
    assert answer.status == 200 and str(answer.url).endswith("/admin/login?bye=1")


async def test_a_login_needs_its_pages_token(console: Console) -> None:
    form = {"secret": console.token, "next": "/admin/"}
    assert (await console.client.post("/admin/login", data=form)).status == 403
    await console.login_csrf()  # the cookie is set, but the form does not carry its token
    assert (await console.client.post("/admin/login", data=form | {"csrf": "x"})).status == 403
    csrf = await console.login_csrf()
    other_site = {"Origin": "http://evil.example"}
    answer = await console.client.post(
        "/admin/login", data=form | {"csrf": csrf}, headers=other_site
    )
    assert answer.status == 403
    assert (await console.client.get("/admin/api/session")).status == 401


async def test_failed_logins_are_limited_on_virtual_time(console: Console) -> None:
    for _ in range(LOGIN_FAILURES):
        csrf = await console.login_csrf()
        form = {"secret": "wrong", "csrf": csrf}
        answer = await console.client.post("/admin/login", data=form)
        assert answer.status == 401
    csrf = await console.login_csrf()
    answer = await console.client.post("/admin/login", data={"secret": console.token, "csrf": csrf})
    assert answer.status == 429  # even the right token waits
    assert int(answer.headers["Retry-After"]) == int(LOGIN_WINDOW) + 1
    await console.clock.advance(LOGIN_WINDOW - 1)
    csrf = await console.login_csrf()
    answer = await console.client.post("/admin/login", data={"secret": console.token, "csrf": csrf})
    assert answer.status == 429
    assert answer.headers["Retry-After"] == "2"
    await console.clock.advance(1)
    await console.login()


async def test_the_cookies_are_httponly_strict_and_kept_to_the_console(console: Console) -> None:
    page = await console.client.get("/admin/login")
    login_cookie = page.headers["Set-Cookie"]
    for flag in ("HttpOnly", "SameSite=Strict", "Path=/admin/login"):
        assert flag in login_cookie
    csrf = re.search(r'name="csrf" value="([^"]+)"', await page.text())
    assert csrf is not None
    form = {"secret": console.token, "csrf": csrf[1]}
    answer = await console.client.post("/admin/login", data=form, allow_redirects=False)
    session = next(c for c in answer.headers.getall("Set-Cookie") if "nahida_session=" in c)
    for flag in ("HttpOnly", "SameSite=Strict", "Path=/admin;"):
        assert flag in session + ";"
    assert "Secure" not in session  # plain http on loopback: a Secure cookie would never return
    value = re.search(r"nahida_session=([^;]+)", session)
    assert value is not None and len(value[1]) >= 40
    assert console.token not in session


async def test_every_answer_carries_the_security_headers(console: Console) -> None:
    static = ["/admin/static/console.css", "/admin/static/console.js", "/admin/static/x.js"]
    anonymous = ["/", "/admin/login", *static, "/admin/memory", "/admin/api/search", "/elsewhere"]
    answers = [await console.client.get(p, allow_redirects=False) for p in anonymous]
    answers.append(await console.client.post("/admin/login", data={"secret": "x"}))  # 403
    csrf = await console.login()
    for path in [*page_routes(console), f"/admin/memory?chat={GROUP}&q=book", "/admin/nope"]:
        answers.append(await console.client.get(path, allow_redirects=False))
    answers.append(await console.client.get("/admin/api/search?chat=bad&q=x"))  # 400
    answers.append(await console.client.post("/admin/logout", data={"csrf": csrf}))
    for answer in answers:
        where = f"{answer.method} {answer.url.path} {answer.status}"
        assert answer.headers["Content-Security-Policy"] == CSP, where
        assert answer.headers["X-Content-Type-Options"] == "nosniff", where
        assert answer.headers["Referrer-Policy"] == "no-referrer", where
        assert answer.headers["X-Frame-Options"] == "DENY", where
        static = answer.url.path.startswith("/admin/static/") and answer.status == 200
        assert answer.headers["Cache-Control"] == ("no-cache" if static else "no-store"), where
    assert {a.status for a in answers} >= {200, 303, 401, 403, 404, 400}


async def test_memory_text_renders_as_text(console: Console) -> None:
    await console.login()
    page = await console.client.get("/admin/memory", params={"chat": GROUP, "q": "review"})
    html = await page.text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt; and {{ 7*7 }}" in html
    assert "<script>alert" not in html and "and 49" not in html
    api = await (await console.client.get("/admin/api/search?chat=" + GROUP + "&q=review")).json()
    assert HOSTILE in api["hits"][0]["text"]
    for path in page_routes(console):
        answer = await console.client.get(path)
        if answer.content_type != "text/html":
            continue
        html = await answer.text()
        scripts = re.findall(r"<script\b[^>]*>", html)
        assert scripts == ['<script src="/admin/static/console.js" defer>'], path
        assert " style=" not in html and "<style" not in html, path
        assert re.search(r"\son[a-z]+=", html) is None, path  # no inline event handlers


async def test_settings_never_show_a_secret(console: Console) -> None:
    await console.login()
    html = await (await console.client.get("/admin/settings")).text()
    answer = await console.client.get("/admin/api/settings")
    text = await answer.text()
    for secret in (*SECRETS, console.token, PASSWORD_HASH, PASSWORD_HASH.split("$")[-1]):
        assert secret not in html
        assert secret not in text
    data = await answer.json()
    assert data["config"]["providers"]["main"]["api_key"] == "***"
    assert data["config"]["channels"]["onebot"]["access_token"] == "***"
    assert data["config"]["admin"]["password_hash"] == "***"
    assert data["config"]["bot"]["language"] == "zh"  # the rest is shown as it is
    assert "NOT reachable" in html and "ok SQLite 3" in html


async def test_rotating_the_token_ends_every_session(console: Console) -> None:
    await console.login()
    old = console.token
    TokenFile(console.data_dir).rotate()  # as `nahida admin token --rotate` in another process
    assert (await console.client.get("/admin/api/session")).status == 401
    csrf = await console.login_csrf()
    assert (
        await console.client.post("/admin/login", data={"secret": old, "csrf": csrf})
    ).status == 401
    await console.login()


async def test_sessions_end_when_idle_or_old(console: Console) -> None:
    await console.login()
    settings = console.config.admin
    await console.clock.advance(settings.idle_minutes * 60 - 1)
    assert (await console.client.get("/admin/api/session")).status == 200  # used: still live
    await console.clock.advance(settings.idle_minutes * 60)
    assert (await console.client.get("/admin/api/session")).status == 401
    await console.login()
    for _ in range(int(settings.session_hours * 60 / settings.idle_minutes) + 1):
        await console.clock.advance(settings.idle_minutes * 60 - 1)
        if (await console.client.get("/admin/api/session")).status == 401:
            break
    else:
        pytest.fail("a session used all the time outlived admin.session_hours")


async def test_the_password_logs_in_too(console: Console) -> None:
    csrf = await console.login_csrf()
    form = {"secret": PASSWORD + "!", "csrf": csrf, "next": "/admin/settings"}
    wrong = await console.client.post("/admin/login", data=form)
    assert wrong.status == 401
    assert 'name="next" value="/admin/settings"' in await wrong.text()  # kept for the retry
    await console.login(PASSWORD)


@pytest.mark.parametrize(
    ("target", "lands"),
    [
        ("/admin/settings", "/admin/settings"),
        (f"/admin/memory?chat={GROUP}&q=book", f"/admin/memory?chat={GROUP}&q=book"),
        ("//evil.example/admin/", "/admin/"),
        ("https://evil.example/", "/admin/"),
        ("/admin/../../etc", "/admin/"),
        ("/admin//evil.example", "/admin/"),
        ("/admin/\\evil.example", "/admin/"),
    ],
)
async def test_after_login_it_goes_only_to_a_console_page(
    console: Console, target: str, lands: str
) -> None:
    form = {"secret": console.token, "csrf": await console.login_csrf(), "next": target}
    answer = await console.client.post("/admin/login", data=form, allow_redirects=False)
    assert answer.headers["Location"] == lands


async def test_the_language_follows_the_config_and_switches(console: Console) -> None:
    await console.login()
    assert "记忆" in await (await console.client.get("/admin/memory")).text()
    switched = await console.client.get("/admin/memory?chat=x&lang=en", allow_redirects=False)
    assert switched.status == 303 and switched.headers["Location"] == "/admin/memory?chat=x"
    assert "SameSite=Strict" in switched.headers["Set-Cookie"]
    html = await (await console.client.get("/admin/memory")).text()
    assert "Search memory as a viewer" in html and '<html lang="en">' in html
    assert "/admin/memory?lang=zh" in html  # the way back


async def test_the_api_answers_json_even_when_it_fails(console: Console) -> None:
    await console.login()
    answer = await console.client.get("/admin/api/nothing-here")
    assert answer.status == 404 and await answer.json() == {"error": "not found"}
    answer = await console.client.post("/admin/api/search", headers={"X-CSRF-Token": "x"})
    assert answer.status == 403 and await answer.json() == {"error": "csrf check failed"}
