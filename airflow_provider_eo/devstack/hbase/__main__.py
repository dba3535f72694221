"""Command line of the local HBase Thrift1 gateway (a dev/test stand-in for HBase's Thrift server).

``python -m airflow_provider_eo.devstack.hbase serve --host H --port P --data-dir D
[--transport buffered|framed] [--protocol binary|compact]`` listens, logs
``ready`` (with host, port, transport and protocol) once it accepts clients, and
runs until SIGTERM/SIGINT. ``--port 0`` picks a free port (printed in the ready line).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path
from types import FrameType

from airflow_provider_eo.devstack.hbase.server import PROTOCOLS, TRANSPORTS, GatewayServer

log = logging.getLogger("airflow_provider_eo.devstack.hbase")


def build_parser() -> argparse.ArgumentParser:
    """The ``serve`` command's argument parser (a stable interface of the local stack)."""
    parser = argparse.ArgumentParser(prog="python -m airflow_provider_eo.devstack.hbase")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the gateway in the foreground")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=9090)
    serve.add_argument("--data-dir", type=Path, required=True)
    serve.add_argument("--transport", choices=sorted(TRANSPORTS), default="buffered")
    serve.add_argument("--protocol", choices=sorted(PROTOCOLS), default="binary")
    serve.add_argument("--log-level", default="INFO")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns the process exit code."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    server = GatewayServer(args.host, args.port, args.data_dir, args.transport, args.protocol)

    def _stop(signum: int, frame: FrameType | None) -> None:
        log.info("signal %d: stopping", signum)
        server.stop()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    log.info(
        "ready host=%s port=%d transport=%s protocol=%s data_dir=%s",
        server.host,
        server.port,
        args.transport,
        args.protocol,
        args.data_dir,
    )
    server.serve_forever()
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
