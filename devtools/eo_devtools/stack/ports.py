"""TCP port selection for the local stack: free ports and a busy-port check."""

from __future__ import annotations

import socket

LOOPBACK = "127.0.0.1"


class PortBusyError(RuntimeError):
    """A service's port is already taken by another process."""


def find_free_port(host: str = LOOPBACK) -> int:
    """Return a port on ``host`` that nobody listens on right now (chosen by the kernel)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def is_port_in_use(port: int, host: str = LOOPBACK) -> bool:
    """True when ``host:port`` cannot be bound (someone listens on it or holds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
        return False


def ensure_port_free(port: int, service: str, host: str = LOOPBACK) -> None:
    """Raise :class:`PortBusyError` naming ``service`` and ``port`` when the port is taken."""
    if is_port_in_use(port, host):
        raise PortBusyError(
            f"cannot start {service}: port {port} on {host} is already in use by another process; "
            f"stop that process or choose another port for {service}"
        )


def accepts_connections(port: int, host: str = LOOPBACK, timeout_s: float = 1.0) -> bool:
    """True when a TCP connection to ``host:port`` succeeds."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False
