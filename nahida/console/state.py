"""What the console's handlers share: one `Console` per application, and per-request values."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import jinja2
from aiohttp import web

from nahida.clock import Clock
from nahida.config import Config
from nahida.console.auth import LoginGuard, PasswordHash, Session, Sessions, TokenFile
from nahida.console.settings import RecentChecks
from nahida.i18n import Language
from nahida.memory import MemoryService


@dataclass(frozen=True)
class Console:
    memory: MemoryService
    config: Config
    data_dir: Path
    tokens: TokenFile
    password: PasswordHash | None  # `admin.password_hash`, parsed
    sessions: Sessions
    guard: LoginGuard
    checks: RecentChecks | None  # `nahida doctor`'s, handed in by whoever starts the console
    templates: jinja2.Environment
    clock: Clock

    async def accepts(self, secret: str) -> bool:
        """Whether `secret` is the token or the configured password (hashed off the loop)."""
        token = self.tokens.matches(secret)
        if self.password is None:
            return token
        password = await asyncio.to_thread(self.password.matches, secret)
        return token or password


CONSOLE = web.AppKey("console", Console)
SESSION = web.RequestKey("session", Session)
LANG: web.RequestKey[Language] = web.RequestKey("lang")


def lang_of(request: web.Request) -> Language:
    return "en" if request.get(LANG) == "en" else "zh"
