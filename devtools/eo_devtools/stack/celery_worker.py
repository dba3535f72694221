"""A Celery worker of the stack's Airflow: ``airflow celery worker`` under its own hostname.

Worker ``n`` is the service ``airflow-celery-worker-<n>`` (pid, log under the state dir like
the other Airflow services) and the Celery node ``worker<n>@<host>``: ``--celery-hostname``,
a small ``--concurrency``, no log server (``--skip-serve-logs``: two workers on one host
would fight for its port; the API server reads task logs from AIRFLOW_HOME), no mingle or
gossip (nothing to synchronise on loopback). Its processes report the same name as their
Airflow hostname (``[core] hostname_callable`` = :func:`task_hostname`), so a task
instance's ``hostname`` says which worker ran it, as it would with one worker per machine.

Health: the worker answers a Celery ``ping`` addressed to its node name through the broker,
i.e. it consumes from Redis. Stopping: SIGTERM to its process group (Celery's warm shutdown
of the main process: running tasks finish), SIGKILL after :attr:`stop_grace_s`.
"""

from __future__ import annotations

import os
import socket

from celery import Celery

from eo_devtools.stack.airflow_config import AirflowConfig
from eo_devtools.stack.airflow_services import AirflowService

WORKER_HOSTNAME_ENV = "EO_STACK_CELERY_HOSTNAME"
"""Set in a worker's environment (inherited by its task processes): the node name they report."""
HOSTNAME_CALLABLE = "eo_devtools.stack.celery_worker.task_hostname"
BROKER_URL_ENV = "AIRFLOW__CELERY__BROKER_URL"
PING_TIMEOUT_S = 1.0


def task_hostname() -> str:
    """``[core] hostname_callable`` of a stack worker's processes: its Celery node name
    (``worker1@host``), else the machine's name like Airflow's default."""
    return os.environ.get(WORKER_HOSTNAME_ENV) or socket.getfqdn()


def worker_name(index: int) -> str:
    """``airflow-celery-worker-<index>`` (1-based): the service's name, pid and log file."""
    return f"airflow-celery-worker-{index}"


def node_name(index: int) -> str:
    """``worker<index>@<host>``: the Celery node name and the tasks' Airflow hostname."""
    return f"worker{index}@{socket.gethostname()}"


def worker_arguments(node: str, concurrency: int) -> tuple[str, ...]:
    """The ``airflow`` arguments that start one worker (no secrets)."""
    return (
        "celery", "worker",
        "--celery-hostname", node,
        "--concurrency", str(concurrency),
        "--skip-serve-logs", "--without-mingle", "--without-gossip",
    )  # fmt: skip


def worker_environment(node: str) -> dict[str, str]:
    """What a worker's environment adds to Airflow's: its node name as the tasks' hostname."""
    return {WORKER_HOSTNAME_ENV: node, "AIRFLOW__CORE__HOSTNAME_CALLABLE": HOSTNAME_CALLABLE}


def answers_ping(broker: str, node: str, timeout_s: float = PING_TIMEOUT_S) -> bool:
    """True when Celery node ``node`` answers a ``ping`` sent through ``broker`` (a URL that
    contains the password: never log it)."""
    app = Celery(broker=broker, set_as_current=False)
    app.conf.broker_connection_retry_on_startup = False
    app.conf.broker_connection_timeout = timeout_s
    try:
        replies = app.control.ping(destination=[node], timeout=timeout_s)
    except Exception:  # the broker down or refusing: not healthy
        return False
    finally:
        app.close()
    return any(node in reply for reply in replies)


class CeleryWorkerService(AirflowService):
    """Worker ``index`` of ``config``'s Airflow; ``config.settings`` holds the Celery settings
    (:func:`eo_devtools.stack.airflow_executor.celery_settings`), the broker URL among them."""

    stop_grace_s = 30.0

    def __init__(self, config: AirflowConfig, index: int, concurrency: int) -> None:
        super().__init__(config)
        self.index = index
        self.name = worker_name(index)
        self.node = node_name(index)
        self.concurrency = concurrency

    def arguments(self) -> tuple[str, ...]:
        return worker_arguments(self.node, self.concurrency)

    def environment(self) -> dict[str, str]:
        return {**super().environment(), **worker_environment(self.node)}

    def healthy(self) -> bool:
        broker = self.config.settings.get(BROKER_URL_ENV)
        return broker is not None and answers_ping(broker, self.node)
