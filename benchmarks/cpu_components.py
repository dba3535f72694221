"""Which component of a run spent the CPU: Spark's processes by kind, and each stack server.

A ``spark-submit`` run's process tree (:class:`benchmarks.process_meter.ProcessMeter` with
:func:`spark_process_kind`) splits into:

* ``spark_jvm``: the driver JVM; in local mode the executors live in it too (Spark's
  scheduler, the shuffle of rows to Python, and for Spark's Kafka source the Kafka consumer);
* ``launcher``: spark-submit's shell scripts and its launcher JVM, which only build the
  command (a fixed cost per run; the CPU of the script that turns into the driver
  JVM by ``exec`` counts as ``spark_jvm``);
* ``driver_python``: the application's Python driver;
* ``python_workers``: the Python workers (``python -m pyspark.worker``, or forked from the
  ``spark.python.daemon.module``): the tasks' Python.

The servers (:class:`ServerMeter`) are ``kafka`` (the broker), ``hbase`` (the master with its
region server and ZooKeeper: standalone HBase), ``hbase-thrift`` and ``postgres`` (with its
backends). :func:`per_record_us` turns CPU seconds into microseconds per record, the unit of
``docs/scale.md``'s capacity arithmetic.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from benchmarks.process_meter import cpu_seconds
from eo_devtools.stack.stack import LocalStack

SERVER_SERVICES = ("kafka", "hbase", "hbase-thrift", "postgres")


def spark_process_kind(cmdline: list[str]) -> str | None:
    """The kind (module docstring) of a process of a spark-submit tree, from its command line;
    None for an empty one (a process that exited and was not reaped yet).

    Python workers run a module (``-m``, perhaps after one interpreter option: the Spark
    Connect server's daemon runs ``python -S -m pyspark.daemon``), also when forked from a
    daemon (they keep its command line); the driver runs the application's file.
    """
    if not cmdline:
        return None
    program = Path(cmdline[0]).name
    if program.startswith("java"):
        return "launcher" if "org.apache.spark.launcher.Main" in cmdline else "spark_jvm"
    if program.startswith("python"):
        return "python_workers" if _runs_module(cmdline[1:]) else "driver_python"
    return "launcher"


def _runs_module(arguments: list[str]) -> bool:
    """True when the interpreter's options, before its first non-option argument, hold ``-m``."""
    for argument in arguments:
        if argument == "-m":
            return True
        if not argument.startswith("-"):
            return False
    return False


def server_processes(stack: LocalStack) -> dict[str, int]:
    """Process id of each of the stack's servers that runs (:data:`SERVER_SERVICES`)."""
    status = stack.status()
    return {name: int(status[name]["pid"]) for name in SERVER_SERVICES if status.get(name, {}).get("pid")}


class ServerMeter:
    """CPU seconds each server spent between construction and :meth:`seconds`."""

    def __init__(self, stack: LocalStack) -> None:
        self.pids = server_processes(stack)
        self.before = {name: cpu_seconds([pid]) for name, pid in self.pids.items()}

    def seconds(self) -> dict[str, float]:
        """Per server, CPU seconds since construction."""
        return {name: cpu_seconds([pid]) - self.before[name] for name, pid in self.pids.items()}


def per_record_us(seconds: Mapping[str, float], records: int) -> dict[str, float]:
    """Each component's CPU in microseconds per record (2 decimals), by name."""
    return {name: round(value * 1e6 / records, 2) for name, value in sorted(seconds.items())}
