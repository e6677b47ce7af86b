"""Who may use the console: the token file, the password hash, sessions and the login limit.

The token is made on first use and kept in the data dir (`admin_token`, mode 0600): whoever can
read the data dir owns the memory anyway, so the file is the credential. `nahida admin token`
prints it, `--rotate` replaces it. A configured `admin.password_hash` (scrypt, written by `nahida
admin hash-password`) logs in too. Every comparison is constant-time.

Sessions live in the serving process only (a restart logs everyone out): a random id in an
HttpOnly, SameSite=Strict cookie, a CSRF token of their own, a lifetime and an idle limit on the
injected clock. Each session remembers the token it began under, so rotating the token — even from
another process — ends every session at its next request. Failed logins are limited per client
address on the same clock (`nahida.ratelimit`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from nahida.clock import SYSTEM, Clock
from nahida.ratelimit import RateLimiter

TOKEN_FILE = "admin_token"
SCRYPT_LOG_N = 15  # the work factor new hashes get (n = 2**15)
_PHC = re.compile(
    r"^\$scrypt\$ln=(?P<ln>\d{1,2}),r=(?P<r>\d{1,2}),p=(?P<p>\d{1,2})"
    r"\$(?P<salt>[A-Za-z0-9+/]+)\$(?P<key>[A-Za-z0-9+/]+)$"
)
LOGIN_FAILURES = 5  # failed logins an address may make per window
LOGIN_WINDOW = 300.0  # seconds
MAX_SESSIONS = 64  # the oldest goes first beyond this


def constant_equal(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


# the token file -------------------------------------------------------------------------------


class TokenFile:
    """`<data dir>/admin_token`: made on first use (0600), read again whenever it changed."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / TOKEN_FILE
        self._seen: tuple[int, int, int] | None = None  # (inode, size, mtime) of the cached read
        self._token = ""

    def read(self) -> str:
        """The token, made now if there is none yet."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return self._create()
        seen = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        if seen != self._seen:
            if stat.st_mode & 0o077:  # readable by others: tighten it rather than trust it less
                os.chmod(self.path, 0o600)
            token = self.path.read_text(encoding="utf-8").strip()
            if not token:
                return self.rotate()
            self._token, self._seen = token, seen
        return self._token

    def rotate(self) -> str:
        """A new token replaces the old one at once (every session made under it ends)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        token = secrets.token_urlsafe(32)
        spare = self.path.with_name(f".{TOKEN_FILE}.{secrets.token_hex(4)}")
        fd = os.open(spare, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(token + "\n")
        os.replace(spare, self.path)
        self._seen = None
        return self.read()

    def _create(self) -> str:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        token = secrets.token_urlsafe(32)
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first: theirs stands
            return self.read()
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(token + "\n")
        return self.read()

    def fingerprint(self) -> str:
        """What a session remembers of the token it began under (never the token itself)."""
        return hashlib.sha256(self.read().encode("utf-8")).hexdigest()

    def matches(self, given: str) -> bool:
        return constant_equal(given.strip(), self.read())


# password hashes ------------------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True, slots=True)
class PasswordHash:
    """`$scrypt$ln=15,r=8,p=1$<salt>$<key>` (the PHC string format, base64 without padding)."""

    log_n: int
    r: int
    p: int
    salt: bytes
    key: bytes

    @classmethod
    def parse(cls, text: str) -> PasswordHash:
        """Raises ValueError for anything but a well-formed scrypt hash of sane cost."""
        found = _PHC.match(text.strip())
        if found is None:
            raise ValueError("not a scrypt hash ($scrypt$ln=…,r=…,p=…$salt$key)")
        log_n, r, p = int(found["ln"]), int(found["r"]), int(found["p"])
        if not (10 <= log_n <= 20 and 1 <= r <= 32 and 1 <= p <= 16):
            raise ValueError("scrypt cost out of range (ln 10–20, r 1–32, p 1–16)")
        salt, key = _unb64(found["salt"]), _unb64(found["key"])
        if len(salt) < 8 or len(key) < 16:
            raise ValueError("scrypt salt or key too short")
        return cls(log_n, r, p, salt, key)

    @classmethod
    def make(cls, password: str, log_n: int = SCRYPT_LOG_N) -> PasswordHash:
        salt = os.urandom(16)
        return cls(log_n, 8, 1, salt, _derive(password, salt, log_n, 8, 1, 32))

    def matches(self, password: str) -> bool:
        derived = _derive(password, self.salt, self.log_n, self.r, self.p, len(self.key))
        return hmac.compare_digest(derived, self.key)

    def __str__(self) -> str:
        cost = f"ln={self.log_n},r={self.r},p={self.p}"
        return f"$scrypt${cost}${_b64(self.salt)}${_b64(self.key)}"


def _derive(password: str, salt: bytes, log_n: int, r: int, p: int, size: int) -> bytes:
    n = 1 << log_n
    memory = 128 * r * n * (p + 1) + (1 << 20)  # what scrypt needs, with room to spare
    return hashlib.scrypt(
        password.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=memory, dklen=size
    )


# sessions -------------------------------------------------------------------------------------


@dataclass(slots=True)
class Session:
    id: str
    csrf: str
    epoch: str  # the token's fingerprint when the session began
    started: float  # on the clock's monotonic time
    seen: float


class Sessions:
    """Server-side sessions: random ids, a lifetime, an idle limit, at most `limit` at once."""

    def __init__(
        self,
        *,
        lifetime: float,
        idle: float,
        clock: Clock = SYSTEM,
        limit: int = MAX_SESSIONS,
    ) -> None:
        self.lifetime = lifetime
        self.idle = idle
        self.limit = limit
        self._clock = clock
        self._sessions: OrderedDict[str, Session] = OrderedDict()  # oldest first

    def __len__(self) -> int:
        return len(self._sessions)

    def start(self, epoch: str) -> Session:
        now = self._clock.monotonic()
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), epoch, now, now)
        self._sessions[session.id] = session
        while len(self._sessions) > self.limit:
            self._sessions.popitem(last=False)
        return session

    def get(self, session_id: str | None, epoch: str) -> Session | None:
        """The live session with this id, begun under this token; an expired one is ended."""
        if not session_id:
            return None
        session = self._sessions.get(session_id)
        if session is None:
            return None
        now = self._clock.monotonic()
        expired = now - session.started >= self.lifetime or now - session.seen >= self.idle
        if expired or not constant_equal(session.epoch, epoch):
            del self._sessions[session_id]
            return None
        session.seen = now
        return session

    def end(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)


class LoginGuard:
    """Failed logins per client address: `LOGIN_FAILURES` per `LOGIN_WINDOW`, then refused."""

    def __init__(self, clock: Clock = SYSTEM) -> None:
        self._failures = RateLimiter(LOGIN_FAILURES, window=LOGIN_WINDOW, clock=clock)

    def retry_after(self, address: str) -> float:
        """Seconds until this address may try again (0: now)."""
        return self._failures.retry_after(address)

    def failed(self, address: str) -> None:
        self._failures.allow(address)
