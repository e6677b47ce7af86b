"""Action frames written together: every frame a connection sends in one pass of the event loop
leaves in one write at the end of it.

A reply is one action frame. Written one at a time, each frame is a system call of its own and,
on a loopback or LAN link, a wakeup of the implementation's reader: in the OneBot burst the
`send()` under `send_str` was ~11 % of the event loop's samples (py-spy), with ~3 frames written
in an average pass. The `Outbox` keeps them until the pass ends (`call_soon`) and writes the same
bytes, in the same order, at once.

aiohttp keeps its frame writer to itself, so the outbox reaches it through its private
`_writer` (`transport`, `compress`, `use_mask`: the same names in aiohttp 3.9, the oldest the
project allows, and 3.14); where those are missing, or the link compresses its frames
(permessage-deflate: the socket's compressor is aiohttp's), `Outbox.for_socket` answers None
and the connection sends with `send_str` as before. Frames of a client (forward WebSocket) are
masked as RFC 6455 §5.3 asks.
"""

from __future__ import annotations

import asyncio
import random
import struct
from collections.abc import Callable
from typing import Any

FIN_TEXT = 0x81  # a whole text frame
MASKED = 0x80
BACKED_UP = 256 * 1024  # bytes waiting in the transport: the caller should wait for a drain

_SHORT = struct.Struct("!BB")
_MEDIUM = struct.Struct("!BBH")
_LONG = struct.Struct("!BBQ")
_MASK = struct.Struct("!I")


def text_frame(text: str, mask: bytes | None = None) -> bytes:
    """One unfragmented text frame of `text`, masked with the 4-byte `mask` when given."""
    payload = text.encode()
    size = len(payload)
    bit = MASKED if mask is not None else 0
    if size < 126:
        head = _SHORT.pack(FIN_TEXT, size | bit)
    elif size < 65536:
        head = _MEDIUM.pack(FIN_TEXT, 126 | bit, size)
    else:
        head = _LONG.pack(FIN_TEXT, 127 | bit, size)
    if mask is None:
        return head + payload
    return head + mask + masked(payload, mask)


def masked(payload: bytes, mask: bytes) -> bytes:
    """`payload` XOR the repeated 4-byte `mask` (its own inverse)."""
    size = len(payload)
    key = (mask * (size // 4 + 1))[:size]
    return (int.from_bytes(payload, "little") ^ int.from_bytes(key, "little")).to_bytes(
        size, "little"
    )


class Outbox:
    """Frames waiting for the end of the event loop's pass, each with its caller's tag."""

    def __init__(
        self,
        socket: Any,
        transport: asyncio.WriteTransport,
        *,
        mask: bool,
        unsent: Callable[[list[int]], None],
    ) -> None:
        self._socket = socket  # its public `closed`: a close frame is on its way
        self._transport = transport
        self._mask = mask
        self._unsent = unsent  # told the tags of frames a closing socket never took
        self._frames: list[bytes] = []
        self._tags: list[int] = []
        self._loop = asyncio.get_running_loop()

    @classmethod
    def for_socket(cls, socket: Any, unsent: Callable[[list[int]], None]) -> Outbox | None:
        """An outbox for an aiohttp WebSocket whose frames are not compressed; else None."""
        writer = getattr(socket, "_writer", None)
        transport = getattr(writer, "transport", None)
        compress = getattr(writer, "compress", None)
        mask = getattr(writer, "use_mask", None)
        if transport is None or compress is None or compress or not isinstance(mask, bool):
            return None
        return cls(socket, transport, mask=mask, unsent=unsent)

    @property
    def closing(self) -> bool:
        """The socket takes no more frames (its close began, or its transport is closing)."""
        return bool(self._socket.closed) or self._transport.is_closing()

    @property
    def backed_up(self) -> bool:
        """The peer reads slower than we write: send with `send_str`, which waits for it."""
        return self._transport.get_write_buffer_size() > BACKED_UP

    def put(self, tag: int, text: str) -> None:
        """Queue `text` as a text frame; raises ConnectionResetError once the socket closes."""
        if self.closing:
            raise ConnectionResetError("the WebSocket is closing")
        mask = _MASK.pack(random.getrandbits(32)) if self._mask else None
        self._frames.append(text_frame(text, mask))
        self._tags.append(tag)
        if len(self._frames) == 1:
            self._loop.call_soon(self.flush)

    def flush(self) -> None:
        """Write what waits; a socket that began to close meanwhile takes none of it."""
        if not self._frames:
            return
        frames, tags = self._frames, self._tags
        self._frames, self._tags = [], []
        if self.closing:
            self._unsent(tags)
            return
        self._transport.write(b"".join(frames))
