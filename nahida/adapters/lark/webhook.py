"""The webhook (HTTP callback) mode: verify, decrypt, answer at once, process on the bus.

What Lark sends and what is checked, in the order lark-oapi's `EventDispatcherHandler.do` checks it:

1. A body `{"encrypt": "<base64>"}` is AES-256-CBC with key sha256(encrypt_key), the first 16 bytes
   being the IV, PKCS7 padding; it is decrypted with lark-oapi's `AESCipher`.
2. The verification token (`header.token` in v2 events, top-level `token` in v1 and in
   url_verification) must equal the configured one, compared in constant time.
3. `url_verification` is answered with its `challenge` (it carries no signature).
4. With an encrypt key set, `X-Lark-Signature` must be sha256_hex(timestamp + nonce + encrypt_key +
   raw body), from `X-Lark-Request-Timestamp` and `X-Lark-Request-Nonce`.

Unlike the SDK (HTTP 500 for everything), a refused request gets 400 (malformed) or 401 (token or
signature), and nothing of it is processed. An accepted event is handed to the adapter's inbox and
answered 200 before any processing, well inside Lark's 3 s; a full inbox answers 503 so Lark pushes
the event again later.
"""

from __future__ import annotations

import binascii
import hashlib
import hmac
import json
from collections.abc import Callable, Mapping
from typing import Any

import structlog
from aiohttp import web
from lark_oapi.core.utils import AESCipher

log = structlog.get_logger(__name__)

TIMESTAMP = "X-Lark-Request-Timestamp"
NONCE = "X-Lark-Request-Nonce"
SIGNATURE = "X-Lark-Signature"

Offer = Callable[[dict[str, Any]], bool]


class Refused(Exception):
    def __init__(self, status: int, reason: str) -> None:
        self.status = status
        self.reason = reason
        super().__init__(f"{status} {reason}")


def signature(timestamp: str, nonce: str, encrypt_key: str, body: bytes) -> str:
    return hashlib.sha256((timestamp + nonce + encrypt_key).encode() + body).hexdigest()


def open_body(
    body: bytes, headers: Mapping[str, str], *, encrypt_key: str, verification_token: str
) -> dict[str, Any]:
    """The verified, decrypted event (or challenge) of one request; raises `Refused`."""
    outer = _json_object(body)
    encrypted = outer.get("encrypt")
    if encrypted:
        if not encrypt_key:
            raise Refused(400, "encrypted body but no encrypt_key configured")
        try:
            plain = AESCipher(encrypt_key).decrypt_str(str(encrypted))
        except (ValueError, binascii.Error, UnicodeDecodeError):
            raise Refused(400, "cannot decrypt the body (wrong encrypt_key?)") from None
        payload = _json_object(plain.encode())
    else:
        payload = outer
    if verification_token and not _same(_token_of(payload), verification_token):
        raise Refused(401, "verification token mismatch")
    if payload.get("type") == "url_verification":
        return payload
    if encrypt_key:
        expected = signature(headers.get(TIMESTAMP, ""), headers.get(NONCE, ""), encrypt_key, body)
        if not _same(headers.get(SIGNATURE), expected):
            raise Refused(401, "signature mismatch")
    return payload


class WebhookReceiver:
    """The aiohttp handler mounted at `channels.lark.path` on the shared inbound server."""

    def __init__(self, *, encrypt_key: str, verification_token: str, offer: Offer) -> None:
        self._encrypt_key = encrypt_key
        self._verification_token = verification_token
        self._offer = offer
        self.refused = 0

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        try:
            payload = open_body(
                body,
                request.headers,
                encrypt_key=self._encrypt_key,
                verification_token=self._verification_token,
            )
        except Refused as refusal:
            self.refused += 1
            log.warning("lark_webhook_refused", status=refusal.status, reason=refusal.reason)
            return web.json_response({"msg": refusal.reason}, status=refusal.status)
        if payload.get("type") == "url_verification":
            return web.json_response({"challenge": str(payload.get("challenge", ""))})
        if not self._offer(payload):
            return web.json_response({"msg": "busy, push again later"}, status=503)
        return web.json_response({"msg": "success"})


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise Refused(400, "body is not JSON") from None
    if not isinstance(value, dict):
        raise Refused(400, "body is not a JSON object")
    return value


def _token_of(payload: dict[str, Any]) -> Any:
    header = payload.get("header")
    if payload.get("schema") and isinstance(header, dict):
        return header.get("token")
    return payload.get("token")


def _same(given: Any, expected: str) -> bool:
    return isinstance(given, str) and hmac.compare_digest(given.encode(), expected.encode())
