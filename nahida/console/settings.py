"""The Settings page's data: the effective config and `nahida doctor`'s checks, secrets masked.

The checks are the doctor's own: whoever starts the console (the CLI's `nahida run` and `nahida
admin`) hands in a `Checks` that runs them, so the console imports no backend. What it shows passes
a careful walk first: `masked_dump` (secret fields and keys that name a secret), then every string
of the config and of the checks' report and lines through the log masker, which replaces each
secret value the config holds, the console's token and password hash, and whatever the secret
filter recognises (keys, credentials in URLs, signed URLs).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from nahida.config import Config, masked_dump, names_secret
from nahida.logs import SecretMasker

MASK = "***"


@dataclass(frozen=True, slots=True)
class Checkup:
    """What `nahida doctor` found: its `--json` report and the lines it prints."""

    report: dict[str, Any]
    lines: list[str]


Checks = Callable[[], Awaitable[Checkup]]


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
