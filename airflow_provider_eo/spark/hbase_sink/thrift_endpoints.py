"""Which HBase Thrift server a write task talks to, and where it goes when that one fails.

A connection lists its Thrift servers in order (``clients.connection_settings.hbase_endpoints``).
Task ``i`` of an epoch starts on server ``i mod n`` (the tasks spread over the servers); on
a retryable error the writer moves to the next server of the list (wrapping around) and
stays there for its later segments. With one server, "the next" is the same one: a plain
reconnect. Host and port are not secrets; the connection's other settings may be, and are
never part of this module's text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_eo.clients.connection_settings import DEFAULT_HBASE_PORT, Endpoint


def endpoint_text(endpoint: Endpoint) -> str:
    """``host:port`` (``[address]:port`` for an IPv6 address), for logs and messages."""
    host, port = endpoint
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class ThriftEndpoints:
    """An ordered, non-empty list of Thrift servers and the one in use.

    ``servers`` empty means the single server of ``connection_kwargs`` (its ``host``/``port``,
    happybase's defaults ``localhost``:9090 when absent). ``first`` (a task index) picks the
    first server in use: ``first mod len(servers)``.
    """

    def __init__(
        self, connection_kwargs: Mapping[str, Any], servers: Sequence[Endpoint] = (), first: int = 0
    ):
        self._base = {k: v for k, v in connection_kwargs.items() if k not in ("host", "port")}
        default = (
            str(connection_kwargs.get("host") or "localhost"),
            int(connection_kwargs.get("port") or DEFAULT_HBASE_PORT),
        )
        self.servers: tuple[Endpoint, ...] = tuple(dict.fromkeys(servers)) or (default,)
        self.index = first % len(self.servers)

    def __len__(self) -> int:
        return len(self.servers)

    @property
    def current(self) -> Endpoint:
        """The server in use."""
        return self.servers[self.index]

    def advance(self) -> tuple[Endpoint, Endpoint]:
        """Move to the next server of the list (wrapping around); returns (from, to)."""
        before = self.current
        self.index = (self.index + 1) % len(self.servers)
        return before, self.current

    def connection_kwargs(self) -> dict[str, Any]:
        """``happybase.Connection`` arguments for the server in use (may hold secrets: not logged)."""
        host, port = self.current
        return {**self._base, "host": host, "port": port}

    def failover_text(self, before: Endpoint, after: Endpoint) -> str:
        """``failover=a:1->b:2`` (another server) or ``reconnect=a:1`` (the same one), for logs."""
        if before == after:
            return f"reconnect={endpoint_text(before)}"
        return f"failover={endpoint_text(before)}->{endpoint_text(after)}"


def spark_task_index() -> int:
    """The running Spark task's partition id: its index in the epoch's list of packs (one
    pack of task ranges per partition); 0 outside a Spark task."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.partitionId() if context is not None else 0
