"""One :class:`Service` as a process of its own: start it, stop it, describe it.

The local stack (:mod:`.stack`) and its Spark cluster (:mod:`.spark_cluster`) run every
service through these functions, so they check ports, write pid files and report status
the same way.
"""

from __future__ import annotations

from typing import Any

from eo_devtools.stack.ports import ensure_port_free
from eo_devtools.stack.process import (
    group_rss_mb,
    running_pid,
    start_process,
    stop_process_group,
    wait_until_healthy,
)
from eo_devtools.stack.service import Service


def launch(service: Service) -> int:
    """Start ``service`` without waiting for it (ports checked free, prepared); returns its
    pid, also its process group. Raises :class:`PortBusyError`."""
    for key in service.port_keys:
        ensure_port_free(service.ports[key], f"{service.name} ({key})")
    service.prepare()
    service.pid_path.parent.mkdir(parents=True, exist_ok=True)
    return start_process(
        service.argv(),
        log_path=service.log_path,
        pid_path=service.pid_path,
        env=service.environment(),
        cwd=service.cwd(),
        user=service.run_as(),
    )


def wait_healthy(service: Service, pid: int) -> None:
    """Return once ``service`` (process ``pid``) answers; :class:`ServiceStartError` with the
    tail of its log when it dies or stays silent past its ``startup_timeout_s``."""
    wait_until_healthy(
        service.name, pid, service.healthy, log_path=service.log_path, timeout_s=service.startup_timeout_s
    )


def start_service(service: Service) -> int:
    """:func:`launch`, :func:`wait_healthy`, then the service's ``after_start``; returns its
    pid. Raises :class:`PortBusyError`, :class:`MissingBinaryError` or :class:`ServiceStartError`."""
    pid = launch(service)
    wait_healthy(service, pid)
    service.after_start()
    return pid


def stop_service(service: Service) -> None:
    """Stop ``service``'s process group (its ``stop_signal``, then SIGKILL after its grace)
    if its pid file names one, and remove the pid file. Returns once no process is left."""
    pid = running_pid(service.pid_path)
    if pid is not None:
        stop_process_group(pid, first_signal=service.stop_signal, grace_s=service.stop_grace_s)
    service.pid_path.unlink(missing_ok=True)


def status_entry(service: Service, pid: int | None, *, healthy: bool) -> dict[str, Any]:
    """The stack's status shape: ``pid``, ``port`` (the one clients use; None for a service
    without ports), ``ports``, ``healthy``, ``state`` (running|stopped) and ``rss_mb`` of
    the process group."""
    return {
        "pid": pid,
        "port": service.ports.get(service.port_keys[0]) if service.port_keys else None,
        "ports": {key: service.ports.get(key) for key in service.port_keys},
        "healthy": healthy,
        "state": "running" if pid is not None else "stopped",
        "rss_mb": group_rss_mb(pid) if pid is not None else None,
    }
