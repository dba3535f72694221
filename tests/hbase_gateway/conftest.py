"""Fixtures: gateway subprocesses on free ports in temp dirs, happybase connections, fresh tables.

``gateway`` is session-wide and parametrized over every transport/protocol pair,
so each test runs against all four server configurations. ``start_gateway``
starts extra gateways (durability tests kill and restart them).
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import happybase
import pytest

COMBOS = [("buffered", "binary"), ("buffered", "compact"), ("framed", "binary"), ("framed", "compact")]
_READY_TIMEOUT_S = 30.0


@dataclass
class Gateway:
    """A gateway subprocess and how to reach it."""

    data_dir: Path
    transport: str
    protocol: str
    process: subprocess.Popen[bytes] | None = None
    host: str = "127.0.0.1"
    port: int = 0
    log_path: Path = field(default_factory=Path)

    def start(self, port: int = 0) -> None:
        """Start (or restart on ``port``) and wait for its ready line."""
        self.log_path = self.data_dir.with_suffix(".log")
        before = self._ready_lines()
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "airflow_provider_eo.devstack.hbase",
                    "serve",
                    "--host",
                    self.host,
                    "--port",
                    str(port),
                    "--data-dir",
                    str(self.data_dir),
                    "--transport",
                    self.transport,
                    "--protocol",
                    self.protocol,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while time.monotonic() < deadline:
            ready = self._ready_lines()
            if len(ready) > len(before):
                self.port = int(ready[-1].split("port=")[1].split()[0])
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"gateway exited early:\n{self.log_path.read_text()}")
            time.sleep(0.05)
        raise RuntimeError(f"gateway not ready:\n{self.log_path.read_text()}")

    def _ready_lines(self) -> list[str]:
        if not self.log_path.exists():
            return []
        return [line for line in self.log_path.read_text().splitlines() if " ready host=" in line]

    def kill9(self) -> None:
        """SIGKILL the process and reap it."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        """SIGTERM (then SIGKILL) the process."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def connect(self, **kwargs: object) -> happybase.Connection:
        """A happybase connection with this gateway's transport and protocol."""
        return happybase.Connection(
            self.host, self.port, transport=self.transport, protocol=self.protocol, **kwargs
        )


@pytest.fixture(scope="session")
def gateway_factory() -> Iterator[Callable[[str, str], Gateway]]:
    """Start gateways in fresh temp dirs; all are stopped at session end."""
    root = Path(tempfile.mkdtemp(prefix="hbase-gw-tests-"))
    started: list[Gateway] = []
    counter = itertools.count()

    def start(transport: str = "buffered", protocol: str = "binary") -> Gateway:
        gw = Gateway(root / f"gw{next(counter)}", transport, protocol)
        started.append(gw)
        gw.start()
        return gw

    yield start
    for gw in started:
        gw.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session", params=COMBOS, ids=["-".join(c) for c in COMBOS])
def gateway(request: pytest.FixtureRequest, gateway_factory: Callable[[str, str], Gateway]) -> Gateway:
    """A running gateway per transport/protocol pair (shared by the session)."""
    transport, protocol = request.param
    return gateway_factory(transport, protocol)


@pytest.fixture
def conn(gateway: Gateway) -> Iterator[happybase.Connection]:
    """A fresh happybase connection to ``gateway``."""
    connection = gateway.connect()
    yield connection
    connection.close()


_table_names = itertools.count()


@pytest.fixture
def make_table(conn: happybase.Connection) -> Callable[..., happybase.Table]:
    """Create a uniquely named table: ``make_table(cf={...}, cg={...})`` (default one family ``cf``)."""

    def make(**families: dict[str, object]) -> happybase.Table:
        name = f"t{os.getpid()}_{next(_table_names)}"
        conn.create_table(name, families or {"cf": {}})
        return conn.table(name)

    return make
