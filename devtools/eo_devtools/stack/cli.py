"""``eo-stack up|down|status|env [--state-dir DIR]``: the local stack from the shell.

``up`` starts PostgreSQL, Kafka, HBase + Thrift, the Schema Registry (Apicurio, in memory,
compatibility BACKWARD set explicitly) and Airflow (api-server, scheduler,
dag-processor, triggerer serving the repository's ``dags/``; ``--no-airflow`` skips it)
and prints the status JSON, then on stderr where the Airflow UI is and which file holds
its login. ``down`` stops everything. ``--airflow-port`` (or ``EO_STACK_AIRFLOW_PORT``)
fixes the Airflow UI's port, ``--dags-folder`` (or ``EO_STACK_DAGS_FOLDER``) its DAG folder.

State dir: ``--state-dir``, else ``$EO_STACK_STATE_DIR``, else ``.eo-state`` in the
current directory. Client ports: ``--postgres-port/--kafka-port/--hbase-port`` (the
HBase Thrift server)/``--schema-registry-port`` or ``EO_STACK_POSTGRES_PORT``,
``EO_STACK_KAFKA_PORT``, ``EO_STACK_HBASE_PORT``, ``EO_STACK_SCHEMA_REGISTRY_PORT``, free
ones otherwise; internal ports (Kafka's controller, HBase's master, region server and
ZooKeeper) are always chosen freely. ``--spark-workers N`` also runs a Spark standalone
cluster (a master and N one-core workers from the installed pyspark; ``status`` shows its
``spark://`` URL and the workers alive, ``env`` adds the ``spark_standalone`` connection),
``--spark-workers 0`` stops it; without the flag a running cluster is left as it is.
``--spark-connect`` also runs a Spark Connect server (:mod:`.spark_connect`; ``env`` adds the
``spark_connect`` connection), ``--no-spark-connect`` stops it.
``--yarn`` also runs Apache Hadoop YARN (a ResourceManager and one NodeManager,
:mod:`.yarn_cluster`; ``status`` shows the RM's web URL, the nodes alive and the Hadoop
client conf dir; ``env`` adds the ``spark_yarn`` connection and exports ``HADOOP_CONF_DIR``
and ``YARN_CONF_DIR``), ``--no-yarn`` stops it; without either a running YARN is left as it is.
``--kafka-brokers N``, ``--hbase-regionservers N`` and ``--thrift-servers N`` choose the
topology (:mod:`.topology`, docs/scale.md); it is recorded, so a later ``up`` without the
flags keeps it; changing it needs ``down`` first. ``--executor celery --celery-workers N``
runs Airflow's CeleryExecutor instead of the LocalExecutor: Redis as its broker and N
workers (:mod:`.airflow_executor`; ``status`` shows ``redis`` and ``airflow-celery-worker-<n>``),
recorded the same way.
Only ``env`` prints secrets (the ledger DSN; while Airflow runs, its ``airflow_api`` connection
with the admin's login, which ``eo-ledger seek`` / ``reset`` use); elsewhere the
Airflow password stays in its login file.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from eo_devtools.stack.airflow_executor import EXECUTOR_CLASSES, AirflowExecutor
from eo_devtools.stack.kdc import Kdc, KdcError
from eo_devtools.stack.ports import PortBusyError
from eo_devtools.stack.process import ServiceStartError
from eo_devtools.stack.service import MissingBinaryError
from eo_devtools.stack.stack import LocalStack
from eo_devtools.stack.topology import Topology

DEFAULT_STATE_DIR = ".eo-state"


def default_state_dir() -> Path:
    """``$EO_STACK_STATE_DIR`` or ``./.eo-state``."""
    return Path(os.environ.get("EO_STACK_STATE_DIR") or Path.cwd() / DEFAULT_STATE_DIR)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="eo-stack",
        description="Local PostgreSQL, Apache Kafka, Apache HBase + Thrift server, Schema Registry, Airflow",
    )
    parser.add_argument("command", choices=["up", "down", "status", "env"])
    parser.add_argument(
        "--state-dir", type=Path, default=None, help="default: $EO_STACK_STATE_DIR or ./.eo-state"
    )
    parser.add_argument("--postgres-port", type=int, default=None)
    parser.add_argument("--kafka-port", type=int, default=None)
    parser.add_argument("--hbase-port", type=int, default=None, help="the HBase Thrift server's port")
    parser.add_argument("--schema-registry-port", type=int, default=None, help="the Schema Registry's port")
    parser.add_argument("--airflow-port", type=int, default=None, help="the Airflow UI/API server's port")
    parser.add_argument("--no-airflow", action="store_true", help="up: do not start Airflow")
    parser.add_argument(
        "--spark-workers",
        type=int,
        default=None,
        metavar="N",
        help="up: run a Spark standalone cluster with N workers (0 stops it; default: leave it as it is)",
    )
    parser.add_argument(
        "--yarn",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="up: run YARN (a ResourceManager and a NodeManager); --no-yarn stops it (default: as it is)",
    )
    parser.add_argument(
        "--tls",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=(
            "up: run the TLS services (Kafka SASL_SSL/OAUTHBEARER, its OAuth issuer; the registry's "
            "HTTPS basic-auth proxy); --no-tls stops them"
        ),
    )
    parser.add_argument(
        "--kerberos",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=(
            "up: run the KDC (MIT krb5kdc, realm EO.TEST) and a Kerberized HBase with its SASL Thrift "
            "server; --no-kerberos stops them (default: as it is)"
        ),
    )
    parser.add_argument(
        "--spark-connect",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="up: run a Spark Connect server (local master); --no-spark-connect stops it (default: as it is)",
    )
    parser.add_argument(
        "--dags-folder", type=Path, default=None, help="Airflow's DAG folder (default: the repo's dags/)"
    )
    parser.add_argument(
        "--executor",
        choices=sorted(EXECUTOR_CLASSES),
        default=None,
        help="up: Airflow's executor (default: as recorded, else local)",
    )
    parser.add_argument(
        "--celery-workers",
        type=int,
        default=None,
        metavar="N",
        help="up: with --executor celery, N workers (default: 2)",
    )
    for flag, what in (
        ("--kafka-brokers", "Kafka brokers (a KRaft cluster when more than 1)"),
        ("--hbase-regionservers", "HBase region servers in the master's JVM"),
        ("--thrift-servers", "HBase Thrift servers"),
    ):
        parser.add_argument(
            flag, type=int, default=None, metavar="N", help=f"up: run N {what} (default: as recorded, else 1)"
        )
    return parser


def requested_topology(args: argparse.Namespace, recorded: Topology) -> Topology | None:
    """The topology the flags ask for (unset flags keep ``recorded``'s counts); None without a flag."""
    asked = {
        "kafka_brokers": args.kafka_brokers,
        "hbase_regionservers": args.hbase_regionservers,
        "thrift_servers": args.thrift_servers,
    }
    if all(value is None for value in asked.values()):
        return None
    return replace(recorded, **{name: value for name, value in asked.items() if value is not None})


def requested_executor(args: argparse.Namespace, recorded: AirflowExecutor) -> AirflowExecutor | None:
    """The executor the flags ask for (``--celery-workers`` alone keeps a recorded Celery
    executor and changes its workers); None without a flag."""
    if args.executor is None and args.celery_workers is None:
        return None
    kind = args.executor or recorded.kind
    if args.celery_workers is not None:
        return AirflowExecutor(kind, args.celery_workers)
    if kind == "local":
        return AirflowExecutor()
    return AirflowExecutor(kind, recorded.celery_workers if recorded.is_celery else 2)


def airflow_hint(status: dict[str, dict[str, object]]) -> str | None:
    """One line naming the Airflow UI's URL and the login file, or None when Airflow is not running."""
    api = status.get("airflow-api-server")
    if not api or api["state"] != "running":
        return None
    url, login = api["url"], api["login_file"]
    return f"Airflow UI: {url} (user and password in {login}); the Epochs page: {url}/eo/"


def spark_hint(status: dict[str, dict[str, object]]) -> str | None:
    """One line naming the Spark master's URL and how many workers are alive, or None without a cluster."""
    master = status.get("spark-master")
    if not master or master["state"] != "running":
        return None
    return f"Spark master: {master['url']} ({master['workers_alive']} workers alive; UI {master['webui']})"


def celery_hint(status: dict[str, dict[str, object]]) -> str | None:
    """One line naming the broker and the Celery workers answering, or None without a broker."""
    broker = status.get("redis")
    if not broker or broker["state"] != "running":
        return None
    workers = [name for name, entry in status.items() if name.startswith("airflow-celery-worker-")]
    healthy = [name for name in workers if status[name]["healthy"]]
    return f"Celery broker: {broker['url']} ({len(healthy)} of {len(workers)} workers answering)"


def yarn_hint(status: dict[str, dict[str, object]]) -> str | None:
    """One line naming the RM's web URL, the nodes alive and the client conf dir, or None without YARN."""
    rm = status.get("yarn-resourcemanager")
    if not rm or rm["state"] != "running":
        return None
    return f"YARN: {rm['url']} ({rm['nodes_alive']} nodes alive; HADOOP_CONF_DIR={rm['hadoop_conf_dir']})"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``eo-stack`` console script; returns the exit code."""
    args = _parser().parse_args(argv)
    ports = {
        name: port
        for name, port in (
            ("postgres", args.postgres_port),
            ("kafka", args.kafka_port),
            ("hbase-thrift", args.hbase_port),
            ("schema-registry", args.schema_registry_port),
            ("airflow-api", args.airflow_port),
        )
        if port is not None
    }
    stack = LocalStack(args.state_dir or default_state_dir(), ports, dags_folder=args.dags_folder)
    try:
        if args.command in ("up", "status"):
            if args.command == "up":
                status = stack.up(
                    airflow=not args.no_airflow,
                    spark_workers=args.spark_workers,
                    yarn=args.yarn,
                    tls=args.tls,
                    kerberos=args.kerberos,
                    spark_connect=args.spark_connect,
                    topology=requested_topology(args, stack.topology),
                    executor=requested_executor(args, stack.executor),
                )
            else:
                status = stack.status()
            print(json.dumps(status, indent=2))
            if hint := airflow_hint(status):
                print(hint, file=sys.stderr)
            for hint in (spark_hint(status), yarn_hint(status), celery_hint(status)):
                if hint:
                    print(hint, file=sys.stderr)
        elif args.command == "down":
            stack.down()
            print(f"local stack in {stack.state_dir} stopped")
        else:
            for name, value in {
                **stack.conn_env(),
                **stack.yarn_client_env(),
                **Kdc(stack.state_dir).client_env(),
            }.items():
                print(f"export {name}={shlex.quote(value)}")
    except (PortBusyError, ServiceStartError, MissingBinaryError, KdcError, RuntimeError) as exc:
        print(f"eo-stack {args.command}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
