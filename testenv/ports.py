"""Ports hands out free loopback TCP ports for control-plane programs."""

from __future__ import annotations

import socket

__all__ = ["free_port"]

# The kernel may hand the same ephemeral port to two binds in a row once the first socket is closed;
# remembering what we gave out keeps two programs of one environment from racing for one port.
_handed_out: set[int] = set()


def free_port() -> int:
    """A port nothing listens on right now and that this process has not handed out before."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port: int = sock.getsockname()[1]
        if port not in _handed_out:
            _handed_out.add(port)
            return port
