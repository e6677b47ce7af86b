"""The console's credentials: the token file, scrypt password hashes, sessions on virtual time,
the failed-login limit, and the walk that masks secrets."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from nahida.clock import VirtualClock
from nahida.config import Config, names_secret
from nahida.console.auth import LOGIN_FAILURES, LoginGuard, PasswordHash, Sessions, TokenFile
from nahida.console.settings import masked, masker


def test_the_token_is_made_once_private_and_kept(tmp_path: Path) -> None:
    tokens = TokenFile(tmp_path / "data")
    token = tokens.read()
    assert len(token) >= 40
    assert stat.S_IMODE(tokens.path.stat().st_mode) == 0o600
    assert TokenFile(tmp_path / "data").read() == token  # another process reads the same
    assert tokens.matches(token) and tokens.matches(f" {token}\n")
    assert not tokens.matches(token[:-1]) and not tokens.matches("")


def test_rotating_replaces_the_token_and_its_fingerprint(tmp_path: Path) -> None:
    tokens, other = TokenFile(tmp_path), TokenFile(tmp_path)
    before, fingerprint = other.read(), other.fingerprint()
    after = tokens.rotate()
    assert after != before and other.read() == after  # seen at once by the other reader
    assert other.fingerprint() != fingerprint and before not in fingerprint
    assert stat.S_IMODE(tokens.path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["admin_token"]  # no spare file left


def test_a_token_file_readable_by_others_is_tightened(tmp_path: Path) -> None:
    tokens = TokenFile(tmp_path)
    tokens.read()
    os.chmod(tokens.path, 0o644)
    tokens.path.write_text("typed-by-hand-token\n", encoding="utf-8")
    assert tokens.read() == "typed-by-hand-token"
    assert stat.S_IMODE(tokens.path.stat().st_mode) == 0o600
    tokens.path.write_text("\n", encoding="utf-8")  # emptied: a new one is made
    assert len(tokens.read()) >= 40


def test_a_password_hash_describes_itself_and_checks_in_constant_time() -> None:
    hashed = PasswordHash.make("correct horse", log_n=10)
    text = str(hashed)
    assert text.startswith("$scrypt$ln=10,r=8,p=1$")
    again = PasswordHash.parse(text)
    assert again == hashed
    assert again.matches("correct horse") and not again.matches("correct horse ")
    assert str(PasswordHash.make("correct horse", log_n=10)) != text  # salted


@pytest.mark.parametrize(
    "text",
    [
        "",
        "correct horse",
        "$2b$12$abcdefghijklmnopqrstuv",  # bcrypt: not what the console makes
        "$scrypt$ln=30,r=8,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5a2V5",  # cost out of range
        "$scrypt$ln=10,r=8,p=1$c2E$a2V5a2V5a2V5a2V5a2V5a2V5",  # salt too short
    ],
)
def test_a_bad_password_hash_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        PasswordHash.parse(text)


async def test_sessions_end_when_idle_old_rotated_or_too_many() -> None:
    clock = VirtualClock()
    sessions = Sessions(lifetime=100, idle=10, clock=clock, limit=3)
    first = sessions.start("epoch")
    assert first.id != first.csrf and len(first.id) >= 40
    await clock.advance(9)
    assert sessions.get(first.id, "epoch") is first
    await clock.advance(10)
    assert sessions.get(first.id, "epoch") is None  # idle too long
    kept = sessions.start("epoch")
    for _ in range(12):  # 108 seconds, never idle for 10
        await clock.advance(9)
        sessions.get(kept.id, "epoch")
    assert sessions.get(kept.id, "epoch") is None  # used all along, but past its lifetime
    rotated = sessions.start("epoch")
    assert sessions.get(rotated.id, "another token") is None
    assert sessions.get(rotated.id, "epoch") is None  # ended, not only refused
    made = [sessions.start("epoch") for _ in range(4)]
    assert len(sessions) == 3 and sessions.get(made[0].id, "epoch") is None
    sessions.end(made[-1].id)
    assert sessions.get(made[-1].id, "epoch") is None
    assert sessions.get(None, "epoch") is None and sessions.get("", "epoch") is None


async def test_failed_logins_are_counted_per_address() -> None:
    clock = VirtualClock()
    guard = LoginGuard(clock)
    for _ in range(LOGIN_FAILURES):
        assert guard.retry_after("10.0.0.1") == 0
        guard.failed("10.0.0.1")
    assert guard.retry_after("10.0.0.1") > 0
    assert guard.retry_after("10.0.0.2") == 0
    await clock.advance(guard.retry_after("10.0.0.1"))
    assert guard.retry_after("10.0.0.1") == 0


def test_the_walk_masks_secrets_however_deep() -> None:
    config = Config.model_validate(
        {"providers": {"main": {"type": "openai", "api_key": "sk-abcdef0123456789"}}}
    )
    shown = masked(
        {
            "error": "401 for sk-abcdef0123456789",
            "deep": [{"Authorization": "Bearer x"}, {"url": "https://bob:hunter22@h/x"}],
            "keywords": ["book", "club"],
            "console": "the token tok-123456 leaked",
        },
        masker(config, ["tok-123456"]),
    )
    text = str(shown)
    for secret in ("sk-abcdef0123456789", "Bearer x", "hunter22", "tok-123456"):
        assert secret not in text
    assert shown["keywords"] == ["book", "club"]


@pytest.mark.parametrize(
    ("key", "secret"),
    [("api_key", True), ("access_token", True), ("Authorization", True), ("X-Api-Key", True),
     ("app_secret", True), ("password_hash", True), ("keywords", False), ("hot_size", False),
     ("base_url", False)],
)  # fmt: skip
def test_which_keys_name_a_secret(key: str, secret: bool) -> None:
    assert names_secret(key) is secret
