"""The Settings page's data: the effective config and `nahida doctor`'s checks, secrets masked.

The checks are the doctor's own: whoever starts the console (the CLI's `nahida run` and `nahida
admin`) hands in a `Checks` that runs them, so the console imports no backend. What it shows passes
a careful walk first: `masked_dump` (secret fields and keys that name a secret), then every string
of the config and of the checks' report and lines through the log masker, which replaces each
secret value the config holds, the console's token and password hash, and whatever the secret
filter recognises (keys, credentials in URLs, signed URLs).

The checks open the database a second time and ping each provider, which may take seconds, so the
console runs them at most once a minute (`RecentChecks`): Settings shows a checkup at most that
old, and the Overview's warnings never wait for one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import structlog
import yaml

from nahida.clock import SYSTEM, Clock
from nahida.config import Config, masked_dump, names_secret
from nahida.logs import SecretMasker

MASK = "***"
log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Checkup:
    """What `nahida doctor` found: its `--json` report and the lines it prints."""

    report: dict[str, Any]
    lines: list[str]


Checks = Callable[[], Awaitable[Checkup]]
MAX_AGE = 60.0  # seconds a checkup is shown before the checks run again


class RecentChecks:
    """The last checkup, and at most one run of the checks at a time."""

    def __init__(self, checks: Checks, clock: Clock = SYSTEM, max_age: float = MAX_AGE) -> None:
        self._checks = checks
        self._clock = clock
        self._max_age = max_age
        self._last: tuple[float, Checkup] | None = None  # (monotonic time it ran, checkup)
        self._running: asyncio.Task[Checkup] | None = None

    async def fresh(self) -> Checkup:
        """The last checkup if younger than the age limit, else a new one (waited for)."""
        if self._last is not None and not self._stale():
            return self._last[1]
        return await asyncio.shield(self._run())

    def last(self) -> Checkup | None:
        """The last checkup, never waiting: a stale or missing one starts a run for later."""
        if self._last is None or self._stale():
            self._run()
        return self._last[1] if self._last is not None else None

    async def close(self) -> None:
        if self._running is not None:
            self._running.cancel()
            await asyncio.gather(self._running, return_exceptions=True)

    def _stale(self) -> bool:
        return self._last is None or self._clock.monotonic() - self._last[0] > self._max_age

    def _run(self) -> asyncio.Task[Checkup]:
        if self._running is None or self._running.done():
            self._running = asyncio.ensure_future(self._check())
            self._running.add_done_callback(_report)
        return self._running

    async def _check(self) -> Checkup:
        started = self._clock.monotonic()
        checkup = await self._checks()
        self._last = (started, checkup)
        return checkup


def _report(task: asyncio.Task[Checkup]) -> None:
    """Log a run that failed (whoever waited for it got the error too)."""
    if not task.cancelled() and task.exception() is not None:
        log.warning("console_checks_failed", error=repr(task.exception()))


def masker(config: Config, also: Iterable[str] = ()) -> SecretMasker:
    """Replaces every secret the config holds, and `also` (the console's token)."""
    return SecretMasker([*config.secrets(), *also])


def masked(value: Any, mask: SecretMasker, key: str = "") -> Any:
    """`value` with every secret in it masked, however deep."""
    if isinstance(value, dict):
        return {k: masked(v, mask, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [masked(v, mask, key) for v in value]
    if isinstance(value, str):
        if value and names_secret(key):
            return MASK
        return mask.mask(value)
    return value


def config_shown(config: Config, mask: SecretMasker) -> dict[str, Any]:
    """The effective config, as the Settings page and its API show it."""
    shown: dict[str, Any] = masked(masked_dump(config), mask)
    return shown


def answer(config: Config, mask: SecretMasker, checkup: Checkup | None) -> dict[str, Any]:
    """`/admin/api/settings`: the object `nahida doctor --json` prints; without the checks, its
    `config` alone with `ok: null`."""
    if checkup is None:
        return {"ok": None, "config": config_shown(config, mask)}
    report: dict[str, Any] = masked(checkup.report, mask)
    report["config"] = config_shown(config, mask)
    return report


def lines(checkup: Checkup, mask: SecretMasker) -> list[str]:
    return [mask.mask(line) for line in checkup.lines]


def as_yaml(shown: dict[str, Any]) -> str:
    return yaml.safe_dump(shown, allow_unicode=True, sort_keys=False)
