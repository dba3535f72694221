"""SparkConnectPart: the stack's optional Spark Connect server (``eo-stack up --spark-connect``).

One process: pyspark's own ``bin/spark-submit --class
org.apache.spark.sql.connect.service.SparkConnectServer`` (the ``spark-connect_2.13`` jar ships in
pyspark's ``jars/``) on a local master, its gRPC port recorded in ``stack.json`` under
:data:`PORT_KEY` while it runs (forgotten when it stops). Its executors' Python is the stack's
:func:`.spark_services.executor_python` (the venv's packages, not this repository's editable
installs), so the provider's code must arrive through ``addArtifacts`` as on a real cluster.
Healthy means a Spark Connect client gets an answer to ``SELECT 1``. ``eo-stack env`` adds the
``spark_connect`` connection (the Spark provider's ``spark_connect`` type).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from eo_devtools.stack.ports import LOOPBACK
from eo_devtools.stack.service import MissingBinaryError, Service
from eo_devtools.stack.spark_services import executor_python, spark_home, write_executor_python
from eo_devtools.stack.stack_part import StackPart

PORT_KEY = "connect-server"
"""Not ``spark-...``: those keys belong to the standalone cluster (:func:`.spark_cluster.is_spark_key`)."""
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
LOCAL_MASTER = "local[2]"
DRIVER_MEMORY = "512m"
"""The server's heap bound. Its jobs' tasks run in Python workers (session mode's
``mapInArrow``) and the JVM only plans them and moves short Arrow batches of metrics, so it needs
little heap; Spark refuses a driver heap under 450 MB (its reserved memory x 1.5)."""
JVM_OPTIONS = (
    "-XX:+UseSerialGC",
    "-Xms128m",
    "-Xmn48m",
    "-XX:MinHeapFreeRatio=10",
    "-XX:MaxHeapFreeRatio=30",
    "-XX:TieredStopAtLevel=1",
    "-XX:ReservedCodeCacheSize=64m",
    "-XX:TrimNativeHeapInterval=5000",
)
"""The server's collector and compilers, sized for many small jobs (docs/spark.md "Production
shape"): the serial collector with a fixed 48 MB young generation, so the heap it touches is
that plus what survives (G1 with a 1 GB heap grew its young generation, and so the resident
heap, towards the whole heap under a fleet's 200 jobs a minute and kept it); the old
generation starts at 80 MB and returns free space past 30% at a full collection. Outside the
heap: the C1 compiler only (the JVM plans jobs and moves short metrics batches, hot code it
would not gain much from C2 on, whose compilations take arenas of tens of MB of malloc memory
at once) in a code cache capped at 64 MB (it held 25-32 MB), and the C library's free heap
memory given back to the system every 5 s (``TrimNativeHeapInterval``, JDK >= 17.0.9):
glibc keeps what its threads freed, so the resident size otherwise stays at its high-water
mark."""
MALLOC_ARENA_MAX = "2"
"""glibc's ``MALLOC_ARENA_MAX`` in the server's environment: the server runs about 300
threads (gRPC, sessions, Spark's pools) and glibc gives threads up to 8 arenas per core by
default, each holding freed memory of its own."""
PROBE = (
    "import sys\n"
    "from pyspark.sql.connect.session import SparkSession\n"
    "s = SparkSession.builder.remote(sys.argv[1]).create()\n"
    "assert s.sql('SELECT 1 AS one').collect()[0].one == 1\n"
    "s.stop()\n"
)
#: The server's log4j2 configuration. Spark Connect's execution manager logs every plan it
#: starts at INFO, and a plan holds the job's pickled closure (in session mode: the
#: pipeline's connections). Its level is WARN here, as it must be on any server that runs
#: session-mode epochs (docs/spark.md "Session mode").
LOG4J2 = """\
rootLogger.level = info
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.plans.name = org.apache.spark.sql.connect.service.SparkConnectExecutionManager
logger.plans.level = warn
"""


def connect_url(port: int) -> str:
    """``sc://127.0.0.1:<port>``: what a Spark Connect client's ``remote()`` takes."""
    return f"sc://{LOOPBACK}:{port}"


def spark_connect_connection(port: int) -> str:
    """Airflow JSON connection of type ``spark_connect`` (``SparkConnectHook`` turns host and
    port into ``sc://<host>:<port>/``; no token: the local server has no authentication)."""
    return json.dumps({"conn_type": "spark_connect", "host": LOOPBACK, "port": port})


class SparkConnectService(Service):
    """The Spark Connect server on ``ports["connect-server"]`` with a local master."""

    name = "spark-connect"
    port_keys = (PORT_KEY,)
    stop_grace_s = 20.0
    #: A JVM, a SparkContext and the probe's first session: under a load of 14 on the 2 shared
    #: cores the first ``SELECT 1`` alone took 24 s and 120 s ran out (as for Airflow's services).
    startup_timeout_s = 240.0

    def preflight(self) -> None:
        """pyspark's ``bin/spark-submit`` and the ``spark-connect`` jar must be there."""
        if not (spark_home() / "bin" / "spark-submit").is_file():
            raise MissingBinaryError(f"{spark_home()}/bin/spark-submit not found: reinstall pyspark")
        if not list((spark_home() / "jars").glob("spark-connect_*.jar")):
            raise MissingBinaryError(f"no spark-connect_*.jar in {spark_home()}/jars: pyspark >= 4 ships it")

    @property
    def log4j2_file(self) -> Path:
        return self.state_dir / "spark-connect" / "log4j2.properties"

    def prepare(self) -> None:
        """The executors' interpreter, the server's scratch dir and :data:`LOG4J2` (rewritten)."""
        write_executor_python(self.state_dir)
        self.log4j2_file.parent.mkdir(exist_ok=True)
        self.log4j2_file.write_text(LOG4J2)

    def argv(self) -> list[str]:
        return [
            str(spark_home() / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--master", LOCAL_MASTER,
            "--name", "eo-spark-connect", "--driver-memory", DRIVER_MEMORY,
            "--driver-java-options", " ".join([f"-Dlog4j2.configurationFile=file:{self.log4j2_file}",
                                               *JVM_OPTIONS]),
            "--conf", f"spark.connect.grpc.binding.port={self.port}",
            "--conf", f"spark.connect.grpc.binding.address={LOOPBACK}",
            "--conf", f"spark.local.dir={self.state_dir / 'spark-connect'}",
            "--conf", "spark.ui.enabled=false",
            "spark-internal",
        ]  # fmt: skip

    def environment(self) -> dict[str, str]:
        env = super().environment()
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_LOCAL_IP=LOOPBACK,
            PYSPARK_PYTHON=str(executor_python(self.state_dir)),
            MALLOC_ARENA_MAX=MALLOC_ARENA_MAX,
        )
        env.pop("SPARK_CONF_DIR", None)
        env.pop("SPARK_DAEMON_MEMORY", None)  # spark-class would size this server's heap by it
        env.pop("PYTHONPATH", None)
        return env

    def healthy(self) -> bool:
        """True when a Spark Connect client gets ``1`` back from ``SELECT 1`` (in a child
        process: a client session holds threads and a gRPC channel this process should not keep)."""
        try:  # the port first: cheap, while the JVM is still starting
            socket.create_connection((LOOPBACK, self.port), timeout=2).close()
        except OSError:
            return False
        try:
            done = subprocess.run(
                [sys.executable, "-c", PROBE, connect_url(self.port)], capture_output=True, timeout=60
            )
        except subprocess.TimeoutExpired:
            return False
        return done.returncode == 0


class SparkConnectPart(StackPart):
    """The Spark Connect server of the stack in ``state_dir``."""

    port_keys = (PORT_KEY,)
    conn_var = "AIRFLOW_CONN_SPARK_CONNECT"

    def services(self, ports: Mapping[str, int]) -> list[Service]:
        return [SparkConnectService(self.state_dir, ports)]

    def connection(self, recorded: Mapping[str, int]) -> str:
        return spark_connect_connection(recorded[PORT_KEY])
