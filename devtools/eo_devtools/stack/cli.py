"""``eo-stack up|down|status|env [--state-dir DIR]``: the local stack from the shell.

State dir: ``--state-dir``, else ``$EO_STACK_STATE_DIR``, else ``.eo-state`` in the
current directory. Client ports: ``--postgres-port/--kafka-port/--hbase-port`` (the
HBase Thrift server) or ``EO_STACK_POSTGRES_PORT/EO_STACK_KAFKA_PORT/EO_STACK_HBASE_PORT``,
free ones otherwise; internal ports (Kafka's controller, HBase's master, region server and
ZooKeeper) are always chosen freely. Only ``env`` prints secrets (the ledger DSN).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from eo_devtools.stack.ports import PortBusyError
from eo_devtools.stack.process import ServiceStartError
from eo_devtools.stack.service import MissingBinaryError
from eo_devtools.stack.stack import LocalStack

DEFAULT_STATE_DIR = ".eo-state"


def default_state_dir() -> Path:
    """``$EO_STACK_STATE_DIR`` or ``./.eo-state``."""
    return Path(os.environ.get("EO_STACK_STATE_DIR") or Path.cwd() / DEFAULT_STATE_DIR)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="eo-stack", description="Local PostgreSQL, Apache Kafka, Apache HBase + Thrift server"
    )
    parser.add_argument("command", choices=["up", "down", "status", "env"])
    parser.add_argument(
        "--state-dir", type=Path, default=None, help="default: $EO_STACK_STATE_DIR or ./.eo-state"
    )
    parser.add_argument("--postgres-port", type=int, default=None)
    parser.add_argument("--kafka-port", type=int, default=None)
    parser.add_argument("--hbase-port", type=int, default=None, help="the HBase Thrift server's port")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``eo-stack`` console script; returns the exit code."""
    args = _parser().parse_args(argv)
    ports = {
        name: port
        for name, port in (
            ("postgres", args.postgres_port),
            ("kafka", args.kafka_port),
            ("hbase-thrift", args.hbase_port),
        )
        if port is not None
    }
    stack = LocalStack(args.state_dir or default_state_dir(), ports)
    try:
        if args.command == "up":
            print(json.dumps(stack.up(), indent=2))
        elif args.command == "down":
            stack.down()
            print(f"local stack in {stack.state_dir} stopped")
        elif args.command == "status":
            print(json.dumps(stack.status(), indent=2))
        else:
            for name, value in stack.conn_env().items():
                print(f"export {name}={shlex.quote(value)}")
    except (PortBusyError, ServiceStartError, MissingBinaryError, RuntimeError) as exc:
        print(f"eo-stack {args.command}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
