"""Lark events as the platform sends them, and webhook bodies encrypted and signed as Lark does.

Encryption is done independently of the adapter and of lark-oapi, with pycryptodome: AES-256-CBC,
key sha256(encrypt_key), a random 16-byte IV prepended, PKCS7 padding, base64. The signature is
sha256_hex(timestamp + nonce + encrypt_key + raw body), sent in `X-Lark-Signature`.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import os
import time
from typing import Any

from Crypto.Cipher import AES

_ids = itertools.count(1)


def mention(key: str, open_id: str, name: str) -> dict[str, Any]:
    return {
        "key": key,
        "id": {"open_id": open_id, "union_id": f"on_{open_id}", "user_id": None},
        "name": name,
        "tenant_key": "tenant",
    }


def message_event(
    text: str | None = None,
    *,
    content: dict[str, Any] | None = None,
    message_type: str = "text",
    chat_type: str = "p2p",
    chat_id: str = "oc_chat",
    sender: str = "ou_alice",
    mentions: list[dict[str, Any]] | None = None,
    message_id: str | None = None,
    event_id: str | None = None,
    parent_id: str | None = None,
    token: str = "v-token",
    app_id: str = "cli_test",
) -> dict[str, Any]:
    """An `im.message.receive_v1` event (schema 2.0); `text` makes a text message."""
    n = next(_ids)
    if content is None:
        content = {"text": text or ""}
    message: dict[str, Any] = {
        "message_id": message_id or f"om_{n}",
        "root_id": parent_id or "",
        "parent_id": parent_id or "",
        "create_time": str(int(time.time() * 1000)),
        "update_time": str(int(time.time() * 1000)),
        "chat_id": chat_id,
        "chat_type": chat_type,
        "message_type": message_type,
        "content": json.dumps(content, ensure_ascii=False),
        "user_agent": "Mozilla/5.0 Lark/7.0",
    }
    if mentions:
        message["mentions"] = mentions
    return {
        "schema": "2.0",
        "header": {
            "event_id": event_id or f"ev_{n}",
            "token": token,
            "create_time": str(int(time.time() * 1000)),
            "event_type": "im.message.receive_v1",
            "tenant_key": "tenant",
            "app_id": app_id,
        },
        "event": {
            "sender": {
                "sender_id": {"open_id": sender, "union_id": f"on_{sender}", "user_id": None},
                "sender_type": "user",
                "tenant_key": "tenant",
            },
            "message": message,
        },
    }


def url_verification(challenge: str = "challenge-123", token: str = "v-token") -> dict[str, Any]:
    return {"challenge": challenge, "token": token, "type": "url_verification"}


def encrypt(payload: dict[str, Any] | str, encrypt_key: str, iv: bytes | None = None) -> str:
    plain = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
    iv = iv or os.urandom(16)
    pad = 16 - len(plain) % 16
    cipher = AES.new(hashlib.sha256(encrypt_key.encode()).digest(), AES.MODE_CBC, iv)
    return base64.b64encode(iv + cipher.encrypt(plain + bytes([pad]) * pad)).decode()


def webhook_request(
    payload: dict[str, Any], *, encrypt_key: str = "", sign_key: str | None = None
) -> tuple[bytes, dict[str, str]]:
    """Body and headers of one callback: encrypted and signed when `encrypt_key` is set.

    `sign_key` signs with another key than the one used to encrypt (a forged request).
    """
    if encrypt_key:
        body = json.dumps({"encrypt": encrypt(payload, encrypt_key)}).encode()
    else:
        body = json.dumps(payload).encode()
    headers = {"Content-Type": "application/json"}
    key = encrypt_key if sign_key is None else sign_key
    if key:
        timestamp, nonce = str(int(time.time())), f"nonce-{next(_ids)}"
        digest = hashlib.sha256((timestamp + nonce + key).encode() + body).hexdigest()
        headers |= {
            "X-Lark-Request-Timestamp": timestamp,
            "X-Lark-Request-Nonce": nonce,
            "X-Lark-Signature": digest,
        }
    return body, headers
