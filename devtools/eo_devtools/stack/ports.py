"""TCP port selection for the local stack: free ports and a busy-port check."""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOOPBACK = "127.0.0.1"

#: Where the kernel picks ephemeral ports (outgoing connections, ``bind(port 0)``).
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")

#: Listening ports are drawn from here, below the usual ephemeral range (32768-60999).
LISTEN_PORT_RANGE = (20000, 32767)


class PortBusyError(RuntimeError):
    """A service's port is already taken by another process."""


def ephemeral_range() -> tuple[int, int]:
    """The kernel's ephemeral port range (Linux's default when it cannot be read)."""
    try:
        low, high = EPHEMERAL_RANGE_FILE.read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def listen_port_candidates() -> list[int]:
    """The ports of :data:`LISTEN_PORT_RANGE` outside the ephemeral range, shuffled."""
    low, high = ephemeral_range()
    start, end = LISTEN_PORT_RANGE
    ports = [port for port in range(start, end + 1) if not low <= port <= high]
    random.shuffle(ports)
    return ports


def find_free_port(host: str = LOOPBACK) -> int:
    """Return a port on ``host`` that nobody holds right now, outside the ephemeral range.

    A service keeps its port across restarts (the fault tests kill and restart them). A port
    from the ephemeral range could meanwhile become the local end of some client's outgoing
    connection, and the restart would fail with "Address already in use"; a port below that
    range is never handed out by the kernel. Falls back to a kernel-chosen port only when the
    whole listening range is taken.
    """
    for port in listen_port_candidates():
        if not is_port_in_use(port, host):
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        chosen: int = sock.getsockname()[1]
        return chosen


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
