"""Process handling of the local stack, with real (tiny) processes and sockets."""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from pathlib import Path

import pytest

from eo_devtools.stack.ports import (
    LISTEN_PORT_RANGE,
    PortBusyError,
    ensure_port_free,
    ephemeral_range,
    find_free_port,
    is_port_in_use,
)
from eo_devtools.stack.process import (
    ServiceStartError,
    group_members,
    is_running,
    read_pid,
    start_process,
    stop_process_group,
    wait_until_healthy,
)


def _start(tmp_path: Path, script: str) -> int:
    return start_process(
        [sys.executable, "-c", script],
        log_path=tmp_path / "logs" / "svc.log",
        pid_path=tmp_path / "svc.pid",
        env=dict(os.environ),
        cwd=tmp_path,
    )


def test_process_that_exits_during_startup_raises_with_its_log_tail(tmp_path: Path) -> None:
    pid = _start(tmp_path, "print('config file missing: /etc/xyz.conf', flush=True); raise SystemExit(3)")
    assert read_pid(tmp_path / "svc.pid") == pid
    with pytest.raises(ServiceStartError) as err:
        wait_until_healthy("svc", pid, lambda: False, log_path=tmp_path / "logs" / "svc.log", timeout_s=30)
    assert f"svc (pid {pid}) exited during startup" in str(err.value)
    assert "config file missing: /etc/xyz.conf" in str(err.value)


def test_process_that_never_gets_healthy_times_out_with_its_log_tail(tmp_path: Path) -> None:
    pid = _start(tmp_path, "import time; print('still warming up', flush=True); time.sleep(60)")
    try:
        with pytest.raises(ServiceStartError) as err:
            wait_until_healthy(
                "svc", pid, lambda: False, log_path=tmp_path / "logs" / "svc.log", timeout_s=0.5
            )
        assert f"svc (pid {pid}) did not become healthy" in str(err.value)
        assert "still warming up" in str(err.value)
    finally:
        stop_process_group(pid)
    assert not is_running(pid)


def test_stop_kills_the_whole_group_even_a_child_ignoring_sigterm(tmp_path: Path) -> None:
    script = (
        "import signal, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', "
        "'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print(1, flush=True); time.sleep(60)'])\n"
        "print('child', child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    pid = _start(tmp_path, script)
    log = tmp_path / "logs" / "svc.log"
    deadline = time.monotonic() + 30
    while len(group_members(pid)) < 2 or log.read_text().count("\n") < 2:
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    child = int(log.read_text().split("child ")[1].split()[0])
    assert sorted(group_members(pid)) == sorted([pid, child])
    stop_process_group(pid, first_signal=signal.SIGTERM, grace_s=0.5)
    assert group_members(pid) == []
    assert not is_running(child)


def test_busy_port_error_names_service_and_port() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert is_port_in_use(port)
        with pytest.raises(
            PortBusyError, match=f"cannot start broker: port {port} on 127.0.0.1 is already in use"
        ):
            ensure_port_free(port, "broker")
    assert not is_port_in_use(port)
    assert not is_port_in_use(find_free_port())


def test_stop_ends_a_sigstopped_process_with_its_first_signal(tmp_path: Path) -> None:
    script = (
        "import signal, sys, time\n"
        "def bye(*_):\n"
        "    print('terminated by SIGTERM', flush=True)\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, bye)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    pid = _start(tmp_path, script)
    log = tmp_path / "logs" / "svc.log"
    deadline = time.monotonic() + 30
    while "ready" not in log.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(pid, signal.SIGSTOP)
    stop_process_group(pid, first_signal=signal.SIGTERM, grace_s=5)
    assert group_members(pid) == []
    assert log.read_text().splitlines() == ["ready", "terminated by SIGTERM"]


def test_free_ports_lie_outside_the_kernels_ephemeral_range() -> None:
    """A restarted service keeps its port: no outgoing connection may have taken it meanwhile."""
    low, high = ephemeral_range()
    ports = {find_free_port() for _ in range(50)}
    assert all(not low <= port <= high for port in ports), sorted(ports)
    assert all(LISTEN_PORT_RANGE[0] <= port <= LISTEN_PORT_RANGE[1] for port in ports)
    assert len(ports) > 40  # drawn at random, so concurrent stacks rarely meet
