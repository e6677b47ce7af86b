"""The conftest switch: tests can reach loopback only."""

from __future__ import annotations

import socket

import pytest

from tests.conftest import RealNetworkCallError


def test_non_loopback_connect_fails() -> None:
    with (
        socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock,
        pytest.raises(RealNetworkCallError),
    ):
        sock.connect(("93.184.216.34", 80))


def test_loopback_is_allowed() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as client:
            client.connect(server.getsockname())
