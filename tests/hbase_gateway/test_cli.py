"""The ``serve`` command: ready line, free-port selection, clean SIGTERM exit, argument validation."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.hbase_gateway.conftest import Gateway

MODULE = "airflow_provider_eo.devstack.hbase"


def test_sigterm_stops_the_gateway_with_exit_code_zero(
    gateway_factory: Callable[[str, str], Gateway],
) -> None:
    gw = gateway_factory("framed", "compact")
    ready = [line for line in gw.log_path.read_text().splitlines() if " ready host=" in line][-1]
    assert f"ready host=127.0.0.1 port={gw.port} transport=framed protocol=compact" in ready
    assert gw.connect().tables() == []
    assert gw.process is not None
    gw.process.terminate()
    assert gw.process.wait(timeout=10) == 0


def test_unknown_transport_is_rejected(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            MODULE,
            "serve",
            "--port",
            "0",
            "--data-dir",
            str(tmp_path),
            "--transport",
            "http",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "invalid choice: 'http'" in result.stderr


def test_data_dir_is_required(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", MODULE, "serve", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "--data-dir" in result.stderr
