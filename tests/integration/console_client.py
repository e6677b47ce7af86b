"""An aiohttp test client on the console over seeded memory, on a virtual clock, with a fake set
of doctor's checks that leak every secret (the console must mask them)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from nahida.clock import VirtualClock
from nahida.config import Config, masked_dump
from nahida.console import Checkup, create_app
from nahida.console.auth import PasswordHash, TokenFile
from nahida.console.state import CONSOLE
from nahida.memory import MemoryService
from nahida.memory.store.sqlite import SqliteStore
from tests.console_data import API_KEY, ONEBOT_TOKEN, config_tree, seed

PASSWORD = "correct horse battery staple"
PASSWORD_HASH = str(PasswordHash.make(PASSWORD, log_n=10))  # a cheap cost: tests hash often


def leaky_checks(config: Config) -> Any:
    """The doctor's checks as a careless provider error would word them: secrets inside."""

    async def run() -> Checkup:
        report = {
            "ok": False,
            "providers": [{"name": "main", "reachable": False, "error": f"401 key {API_KEY}"}],
            "channels": [{"channel": "onebot", "line": f"token {ONEBOT_TOKEN}"}],
            "config": masked_dump(config),
            "embedding": {
                "model": "e5",
                "stored": 7,
                "pending": 3,
                "skipped": 2,
                "other_models": 1,
            },
        }
        lines = [f"-- provider main NOT reachable: 401 for key {API_KEY}", "ok SQLite 3"]
        return Checkup(report, lines)

    return run


@dataclass
class Console:
    client: TestClient[web.Request, web.Application]
    clock: VirtualClock
    data_dir: Path
    memory: MemoryService
    config: Config

    @property
    def token(self) -> str:
        return TokenFile(self.data_dir).read()

    async def checked(self) -> None:
        """Wait for the checkup the console started (the Overview shows the last one)."""
        checks = self.client.app[CONSOLE].checks
        assert checks is not None
        await checks.fresh()

    async def login_csrf(self) -> str:
        """Open the login page: the token its form carries (and its cookie holds)."""
        page = await self.client.get("/admin/login")
        found = re.search(r'name="csrf" value="([^"]+)"', await page.text())
        assert found is not None
        return found[1]

    async def login(self, secret: str | None = None, next_page: str = "/admin/") -> str:
        """Log in; the session's CSRF token."""
        form = {"secret": secret or self.token, "csrf": await self.login_csrf(), "next": next_page}
        answer = await self.client.post("/admin/login", data=form, allow_redirects=False)
        assert answer.status == 303, await answer.text()
        session = await self.client.get("/admin/api/session")
        assert session.status == 200
        csrf: str = (await session.json())["csrf_token"]
        return csrf


async def console_client(
    tmp_path: Path, *, checks: bool = True, **admin: Any
) -> AsyncIterator[Console]:
    clock = VirtualClock()
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    config = Config.model_validate(config_tree(password_hash=PASSWORD_HASH, **admin))
    store = SqliteStore(data_dir / "nahida.db")
    memory = MemoryService(store)
    await seed(memory, tmp_path)
    app = create_app(
        memory, config, data_dir, checks=leaky_checks(config) if checks else None, clock=clock
    )
    client = TestClient(TestServer(app))
    await client.start_server()
    try:
        yield Console(client, clock, data_dir, memory, config)
    finally:
        await client.close()
        memory.close()
