"""The gateway's TCP server: a thread per client connection, one transport and protocol per instance.

HBase's Thrift server is configured for one transport (buffered or framed) and
one protocol (binary or compact); clients must use the same. Accepted sockets
have no idle timeout (happybase keeps connections open between calls).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from pathlib import Path
from typing import Any

from thriftpy2.protocol import TBinaryProtocolFactory, TCompactProtocolFactory
from thriftpy2.server import TThreadedServer
from thriftpy2.thrift import TProcessor
from thriftpy2.transport import TBufferedTransport, TFramedTransportFactory, TServerSocket

from airflow_provider_eo.devstack.hbase.handler import HBaseHandler
from airflow_provider_eo.devstack.hbase.idl import hbase_thrift
from airflow_provider_eo.devstack.hbase.storage import Storage

log = logging.getLogger(__name__)


class LargeBufferedTransportFactory:
    """Buffered transport with a 1 MiB buffer: a scan page leaves in a few large writes."""

    def get_transport(self, trans: Any) -> Any:
        return TBufferedTransport(trans, buf_size=1 << 20)


TRANSPORTS: dict[str, Any] = {"buffered": LargeBufferedTransportFactory, "framed": TFramedTransportFactory}
PROTOCOLS: dict[str, Any] = {"binary": TBinaryProtocolFactory, "compact": TCompactProtocolFactory}


class GatewayServer:
    """A listening gateway; :meth:`serve_forever` blocks, :meth:`stop` ends it."""

    def __init__(
        self, host: str, port: int, data_dir: Path, transport: str = "buffered", protocol: str = "binary"
    ) -> None:
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {sorted(TRANSPORTS)}, not {transport!r}")
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {sorted(PROTOCOLS)}, not {protocol!r}")
        self.transport = transport
        self.protocol = protocol
        self.storage = Storage(data_dir)
        self.handler = HBaseHandler(self.storage, host, port)
        self._socket = TServerSocket(host=host, port=port, client_timeout=0, backlog=128)
        self._socket.listen()
        self.host, self.port = self._bound_address()
        self.handler.port = self.port
        self._server = TThreadedServer(
            TProcessor(hbase_thrift.Hbase, self.handler),
            self._socket,
            itrans_factory=TRANSPORTS[transport](),
            iprot_factory=PROTOCOLS[protocol](),
            daemon=True,
        )
        self._stopped = threading.Event()

    def _bound_address(self) -> tuple[str, int]:
        sock = self._socket.sock
        assert sock is not None
        host, port = sock.getsockname()[:2]
        return str(host), int(port)

    def serve_forever(self) -> None:
        """Accept clients until :meth:`stop` (the socket is already listening)."""
        server = self._server
        while not self._stopped.is_set():
            try:
                client = self._socket.accept()
            except OSError:
                if self._stopped.is_set():
                    return
                raise
            if client.sock is not None:
                client.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=server.handle, args=(client,), daemon=True).start()

    def stop(self) -> None:
        """Stop accepting clients and close the listening socket."""
        self._stopped.set()
        sock = self._socket.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            self._socket.close()
