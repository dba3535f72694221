"""The processes of the local stack's Spark standalone cluster: a master and N workers on loopback.

Every process is the installed pyspark's own ``bin/spark-class`` (``SPARK_HOME`` is the
pyspark package), in the foreground, one core and 1 GiB of executor memory per worker.
State: ``<state>/spark/work/worker-<n>`` (each worker's ``--work-dir``: one directory per
application, one per executor inside, holding the executor's ``stdout``/``stderr``),
logs in ``logs/spark-master.log`` and ``logs/spark-worker-<n>.log``.

Executors run Python with :func:`executor_python`: the venv's interpreter *without* its
``site`` processing, so it sees the venv's third-party packages (pyspark, confluent-kafka,
happybase, psycopg2, ...) but not the editable installs of this repository, like a
cluster image that has the provider's dependencies but not the provider. The provider's
code then has to arrive as ``--py-files`` (``airflow_provider_eo.spark.package_zip``), as
on a real cluster. Starting, stopping and probing the cluster as a whole: :mod:`.spark_cluster`.
"""

from __future__ import annotations

import json
import sys
import sysconfig
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyspark

from eo_devtools.stack.ports import LOOPBACK
from eo_devtools.stack.service import MissingBinaryError, Service

MASTER = "spark-master"
MASTER_PORT_KEYS = ("spark-master", "spark-master-webui")
WORKER_CORES = 1
WORKER_MEMORY = "1g"
DAEMON_HEAP = "256m"
"""Heap of the master and worker daemons themselves (``SPARK_DAEMON_MEMORY``)."""


def spark_home() -> Path:
    """The installed pyspark package, which is a complete ``SPARK_HOME`` (jars, bin/)."""
    return Path(pyspark.__file__).resolve().parent


def worker_name(index: int) -> str:
    """``spark-worker-<index>`` (1-based): the service name, pid and log file of a worker."""
    return f"spark-worker-{index}"


def worker_port_keys(index: int) -> tuple[str, str]:
    """The RPC and web UI port keys of worker ``index``."""
    return (worker_name(index), f"{worker_name(index)}-webui")


def recorded_workers(ports: Mapping[str, int]) -> int:
    """How many workers the recorded ``ports`` describe (workers are numbered 1..N)."""
    count = 0
    while worker_name(count + 1) in ports:
        count += 1
    return count


def cluster_port_keys(workers: int) -> list[str]:
    """Every port key of a cluster with ``workers`` workers, master first."""
    keys = list(MASTER_PORT_KEYS)
    for index in range(1, workers + 1):
        keys.extend(worker_port_keys(index))
    return keys


def master_url(ports: Mapping[str, int]) -> str:
    """``spark://127.0.0.1:<port>``: what ``--master`` and the ``spark_standalone`` connection take."""
    return f"spark://{LOOPBACK}:{ports['spark-master']}"


def executor_python(state_dir: Path) -> Path:
    """``<state>/spark/bin/python``: the interpreter executors run (see the module docstring)."""
    return state_dir / "spark" / "bin" / "python"


def write_executor_python(state_dir: Path) -> Path:
    """Write :func:`executor_python` (idempotent) and return its path: a shell script running
    this venv's interpreter with ``-S`` and its site-packages on ``PYTHONPATH``."""
    path = executor_python(state_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    site_packages = sysconfig.get_paths()["purelib"]
    path.write_text(
        "#!/bin/sh\n"
        "# The venv's Python without site processing: third-party packages, no editable installs.\n"
        f'PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{site_packages}" exec {sys.executable} -S "$@"\n'
    )
    path.chmod(0o755)
    return path


def master_json(webui_port: int, timeout_s: float = 5.0) -> dict[str, Any] | None:
    """The master's ``/json/`` (status, workers, applications), or None when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{webui_port}/json/", timeout=timeout_s) as answer:
            data: dict[str, Any] = json.load(answer)
    except (OSError, ValueError):
        return None
    return data


def alive_worker_ports(webui_port: int) -> set[int]:
    """RPC ports of the workers the master lists as ALIVE (empty when the master does not answer)."""
    data = master_json(webui_port) or {}
    return {int(w["port"]) for w in data.get("workers", []) if w.get("state") == "ALIVE"}


class SparkService(Service):
    """A ``spark-class`` daemon of the cluster: shared environment and preflight."""

    stop_grace_s = 20.0
    startup_timeout_s = 120.0
    main_class = ""

    def preflight(self) -> None:
        """pyspark's ``bin/spark-class`` must be there (pip's pyspark ships it)."""
        if not (spark_home() / "bin" / "spark-class").is_file():
            raise MissingBinaryError(f"{spark_home()}/bin/spark-class not found: reinstall pyspark")

    def prepare(self) -> None:
        """Write the executors' interpreter (:func:`write_executor_python`); idempotent."""
        write_executor_python(self.state_dir)

    def spark_args(self) -> list[str]:
        """Arguments after the main class. No secrets."""
        return []

    def argv(self) -> list[str]:
        return [str(spark_home() / "bin" / "spark-class"), self.main_class, *self.spark_args()]

    def environment(self) -> dict[str, str]:
        env = super().environment()
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_LOCAL_IP=LOOPBACK,
            SPARK_LOG_DIR=str(self.state_dir / "logs"),
            SPARK_WORKER_DIR=str(self.state_dir / "spark" / "work"),
            SPARK_NO_DAEMONIZE="1",
            SPARK_DAEMON_MEMORY=DAEMON_HEAP,
            PYSPARK_PYTHON=str(executor_python(self.state_dir)),
        )
        env.pop("SPARK_CONF_DIR", None)
        return env


class SparkMasterService(SparkService):
    """The standalone master: RPC on ``spark-master``, JSON status on ``spark-master-webui``."""

    name = MASTER
    port_keys = MASTER_PORT_KEYS
    main_class = "org.apache.spark.deploy.master.Master"

    def spark_args(self) -> list[str]:
        ports = self.ports
        return [
            "--host",
            LOOPBACK,
            "--port",
            str(ports["spark-master"]),
            "--webui-port",
            str(ports[MASTER_PORT_KEYS[1]]),
        ]

    def healthy(self) -> bool:
        """True when the master's ``/json/`` answers with status ALIVE."""
        data = master_json(self.ports[MASTER_PORT_KEYS[1]])
        return data is not None and data.get("status") == "ALIVE"


class SparkWorkerService(SparkService):
    """Worker ``index`` (1-based): one core, :data:`WORKER_MEMORY`, its own work dir."""

    main_class = "org.apache.spark.deploy.worker.Worker"

    def __init__(self, state_dir: Path, ports: Mapping[str, int], index: int) -> None:
        super().__init__(state_dir, ports)
        self.index = index
        self.name = worker_name(index)
        self.port_keys = worker_port_keys(index)

    @property
    def work_dir(self) -> Path:
        """Where this worker keeps one directory per application (executors' logs inside)."""
        return self.state_dir / "spark" / "work" / f"worker-{self.index}"

    def prepare(self) -> None:
        super().prepare()
        self.work_dir.mkdir(parents=True, exist_ok=True)

    def spark_args(self) -> list[str]:
        rpc, webui = self.port_keys
        return [
            master_url(self.ports),
            "--host", LOOPBACK,
            "--port", str(self.ports[rpc]),
            "--webui-port", str(self.ports[webui]),
            "--cores", str(WORKER_CORES),
            "--memory", WORKER_MEMORY,
            "--work-dir", str(self.work_dir),
        ]  # fmt: skip

    def healthy(self) -> bool:
        """True when the master lists this worker as ALIVE (registered, ready for executors)."""
        return self.ports[self.port_keys[0]] in alive_worker_ports(self.ports[MASTER_PORT_KEYS[1]])


def cluster_services(state_dir: Path, ports: Mapping[str, int], workers: int) -> list[SparkService]:
    """The master then workers 1..``workers``, in start order."""
    master: list[SparkService] = [SparkMasterService(state_dir, ports)]
    return master + [SparkWorkerService(state_dir, ports, i) for i in range(1, workers + 1)]
