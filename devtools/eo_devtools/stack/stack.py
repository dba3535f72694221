"""LocalStack: PostgreSQL, Apache Kafka, Apache HBase and its Thrift server and a Schema Registry
(Apicurio, :mod:`.schema_registry`) under one state dir, and optionally Airflow itself
(:mod:`.airflow`) on top of them.

Layout of the state dir: ``stack.json`` (ports and the topology, :mod:`.topology`), ``pids/<service>.pid``,
``logs/<service>.log``, ``secrets/`` (mode 700), ``postgres/``, ``kafka/``, ``hbase/``,
``schema-registry/`` (its working directory; its storage is in memory),
``airflow/`` (AIRFLOW_HOME, mode 700: ``login.json``, ``secrets.json``, task logs),
``spark/`` (the optional standalone cluster, :mod:`.spark_cluster`), ``yarn/`` (the optional
YARN, :mod:`.yarn_cluster`).
``up`` is idempotent: running healthy services are left alone (same pids, same ports).
Services start in the order of :data:`SERVICES` and stop in reverse (the services of one
:meth:`.service.Service.launch_group`, the nodes of a Kafka cluster, are all launched before
the stack waits for any); Airflow starts
after them (``up(airflow=True)``: its metadata DB is database ``airflow`` of the stack's
PostgreSQL, its DAG folder the repository's ``dags/``) and stops before them. The Spark
cluster (``up(spark_workers=N)`` or :meth:`LocalStack.spark_up`) starts after the services and
before Airflow (whose ``spark_standalone`` connection points at it) and stops before the services;
so does YARN (``up(yarn=True)`` or :meth:`LocalStack.yarn_up`; the ``spark_yarn`` connection).
With a CeleryExecutor (``up(executor=AirflowExecutor("celery", N))``, :mod:`.airflow_executor`,
recorded under ``airflow`` in ``stack.json``) Redis (``redis/``, :mod:`.redis_broker`) starts
just before Airflow and stops just after it, and Airflow's services include N Celery workers.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from eo_devtools.stack.airflow import LocalAirflow
from eo_devtools.stack.airflow_config import ADMIN_USER, AirflowConfig
from eo_devtools.stack.airflow_executor import AirflowExecutor, ExecutorError
from eo_devtools.stack.airflow_services import API_PORT_KEY
from eo_devtools.stack.celery_executor import CeleryParts
from eo_devtools.stack.connections import airflow_api_connection, ledger_tls_connection, stack_conn_env
from eo_devtools.stack.hbase import HBaseService, HBaseThriftService
from eo_devtools.stack.kafka import KafkaService
from eo_devtools.stack.pki import stack_client_cert, stack_pki
from eo_devtools.stack.ports import LOOPBACK, ensure_port_free, find_free_port
from eo_devtools.stack.postgres import DATABASE, TLS_ROLE, PostgresService
from eo_devtools.stack.process import running_pid
from eo_devtools.stack.redis_broker import REDIS_PORT_KEY
from eo_devtools.stack.schema_registry import SchemaRegistryService, registry_url
from eo_devtools.stack.secured_parts import SecuredParts, is_secured_key
from eo_devtools.stack.service import Service
from eo_devtools.stack.service_process import launch, status_entry, stop_service, wait_healthy
from eo_devtools.stack.spark_cluster import SparkCluster, is_spark_key
from eo_devtools.stack.spark_connect import SparkConnectPart
from eo_devtools.stack.spark_services import MASTER, executor_python, master_url, recorded_workers
from eo_devtools.stack.topology import Topology, TopologyError
from eo_devtools.stack.yarn_cluster import YarnCluster, is_yarn_key
from eo_devtools.stack.yarn_config import RM_PORT_KEYS, client_conf_dir
from eo_devtools.stack.yarn_services import RESOURCE_MANAGER, webapp_url

SERVICE_CLASSES: Mapping[str, type[Service]] = {
    "postgres": PostgresService,
    "kafka": KafkaService,
    "hbase": HBaseService,
    "hbase-thrift": HBaseThriftService,
    "schema-registry": SchemaRegistryService,
}
SERVICES: tuple[str, ...] = tuple(SERVICE_CLASSES)
"""The base services, in start order; a topology may run several instances (:func:`service_classes`)."""
PORT_ENV_VARS: Mapping[str, str] = {
    "postgres": "EO_STACK_POSTGRES_PORT",
    "kafka": "EO_STACK_KAFKA_PORT",
    "hbase-thrift": "EO_STACK_HBASE_PORT",
    "schema-registry": "EO_STACK_SCHEMA_REGISTRY_PORT",
    API_PORT_KEY: "EO_STACK_AIRFLOW_PORT",
}
"""The ports clients use can be fixed by environment; the others are chosen freely."""
REPO_DAGS_DIR = Path(__file__).resolve().parents[3] / "dags"
"""The repository's DAG folder: what the stack's Airflow serves unless told otherwise."""
AIRFLOW_DATABASE = "airflow"


def service_classes(topology: Topology) -> dict[str, type[Service]]:
    """Instance name -> configured service class for ``topology``, in start order: each base
    service of :data:`SERVICES` followed by its further instances (``kafka``, ``kafka-2``, ...)."""
    classes: dict[str, type[Service]] = {}
    for base in SERVICE_CLASSES.values():
        for index in range(1, topology.replicas(base.name) + 1):
            configured = base.configured(topology, index)
            classes[configured.name] = configured
    return classes


def launch_groups(services: list[Service]) -> list[list[Service]]:
    """``services`` in their :meth:`.service.Service.launch_group` groups, order kept: the
    stack starts (and stops) each group's members together."""
    groups: dict[str, list[Service]] = {}
    for service in services:
        groups.setdefault(service.launch_group(), []).append(service)
    return list(groups.values())


class LocalStack:
    """The local stack rooted at ``state_dir``; ``ports`` overrides (port key -> port) apply on start.

    ``dags_folder`` is the DAG folder of the stack's Airflow (default: ``$EO_STACK_DAGS_FOLDER``,
    else the repository's ``dags/``).
    """

    def __init__(
        self,
        state_dir: str | Path,
        ports: Mapping[str, int] | None = None,
        *,
        dags_folder: str | Path | None = None,
    ) -> None:
        self.state_dir = Path(state_dir).resolve()
        self._requested_ports = dict(ports or {})
        folder = dags_folder or os.environ.get("EO_STACK_DAGS_FOLDER") or REPO_DAGS_DIR
        self.dags_folder = Path(folder).resolve()

    # -- state ---------------------------------------------------------------
    @property
    def _state_file(self) -> Path:
        return self.state_dir / "stack.json"

    def _recorded_ports(self) -> dict[str, int]:
        try:
            data: dict[str, Any] = json.loads(self._state_file.read_text())
        except FileNotFoundError:
            return {}
        return {name: int(port) for name, port in data.get("ports", {}).items()}

    def _recorded_topology(self) -> Topology:
        try:
            data: dict[str, Any] = json.loads(self._state_file.read_text())
        except FileNotFoundError:
            return Topology()
        return Topology.from_record(data.get("topology"))

    def _recorded_executor(self) -> AirflowExecutor:
        try:
            data: dict[str, Any] = json.loads(self._state_file.read_text())
        except FileNotFoundError:
            return AirflowExecutor()
        return AirflowExecutor.from_record(data.get("airflow"))

    @property
    def executor(self) -> AirflowExecutor:
        """The Airflow executor recorded by the last ``up`` (LocalExecutor before any)."""
        return self._recorded_executor()

    @property
    def topology(self) -> Topology:
        """The topology recorded by the last ``up`` (the default before any)."""
        return self._recorded_topology()

    def _classes(self) -> dict[str, type[Service]]:
        return service_classes(self._recorded_topology())

    def _service(self, name: str, ports: Mapping[str, int]) -> Service:
        return self._classes()[name](self.state_dir, ports)

    def _pid(self, name: str) -> int | None:
        return running_pid(self.state_dir / "pids" / f"{name}.pid")

    def _choose_ports(
        self, recorded: Mapping[str, int], classes: Mapping[str, type[Service]]
    ) -> dict[str, int]:
        """Port key -> port: a running service keeps its ports, then requests, env, record, free."""
        owners = [(name, cls.port_keys) for name, cls in classes.items()]
        owners.append(("airflow-api-server", (API_PORT_KEY,)))
        chosen: dict[str, int] = {}
        for name, keys in owners:
            running = self._pid(name) is not None
            for key in keys:
                env_var = PORT_ENV_VARS.get(key)
                if running and key in recorded:
                    port = recorded[key]
                elif key in self._requested_ports:
                    port = self._requested_ports[key]
                elif env_var and os.environ.get(env_var):
                    port = int(os.environ[env_var])
                else:
                    port = recorded.get(key) or find_free_port()
                while port in chosen.values():  # two free-port picks may coincide
                    port = find_free_port()
                chosen[key] = port
        return chosen

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with open(self.state_dir / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    # -- lifecycle -----------------------------------------------------------
    def up(
        self,
        *,
        airflow: bool = False,
        spark_workers: int | None = None,
        yarn: bool | None = None,
        topology: Topology | None = None,
        executor: AirflowExecutor | None = None,
        tls: bool | None = None,
        kerberos: bool | None = None,
        spark_connect: bool | None = None,
    ) -> dict[str, dict[str, Any]]:
        """Start every missing service and wait until all answer; return :meth:`status`.

        ``airflow``: also start Airflow's api-server, scheduler, dag-processor and triggerer
        (the ``eo-stack up`` default; the Python API's callers, e.g. the tests, opt in).
        ``spark_workers``: N > 0 runs the Spark standalone cluster with N workers
        (:meth:`spark_up`), 0 stops it, None keeps a cluster already recorded as it is.
        ``yarn``: True runs YARN (:meth:`yarn_up`), False stops it, None keeps it as recorded.
        ``tls``: True runs the TLS services (the OAUTHBEARER Kafka node and its OAuth issuer,
        :mod:`.kafka_oauth_part`; the registry's HTTPS basic-auth proxy, :mod:`.registry_tls_part`;
        HBase's Thrift server over HTTPS, :mod:`.hbase_thrift_tls`),
        False stops them, None keeps them as recorded.
        ``kerberos``: True runs the KDC of the realm ``EO.TEST`` (:mod:`.kdc`) and the Kerberized
        HBase with its SASL Thrift server (:mod:`.hbase_kerberos`), False stops them, None keeps
        them as recorded.
        ``spark_connect``: True runs the Spark Connect server (:mod:`.spark_connect`), False
        stops it, None keeps it as recorded.
        ``topology``: how many brokers, region servers and Thrift servers (:mod:`.topology`);
        None keeps the recorded one. Raises :class:`TopologyError` when it differs from the
        topology of services still running (``down`` first).
        ``executor``: Airflow's (:mod:`.airflow_executor`; a CeleryExecutor runs Redis and its
        workers too); None keeps the recorded one. Raises :class:`ExecutorError` when it differs
        from the executor of an Airflow still running (``down`` first).
        """
        with self._locked():
            self.state_dir.chmod(0o755)  # PostgreSQL's OS user must be able to enter it
            (self.state_dir / "pids").mkdir(exist_ok=True)
            recorded = self._recorded_ports()
            recorded_topology = self._recorded_topology()
            topology = topology or recorded_topology
            running = [name for name in service_classes(recorded_topology) if self._pid(name) is not None]
            if topology != recorded_topology and running:
                raise TopologyError(
                    f"the local stack in {self.state_dir} runs {recorded_topology.describe()} "
                    f"({', '.join(running)} running); run eo-stack down first to get {topology.describe()}"
                )
            executor = self._check_executor(executor)
            classes = service_classes(topology)
            ports = self._choose_ports(recorded, classes)
            self._write_state(
                {**ports, **{k: v for k, v in recorded.items() if self._kept_port(k)}}, topology
            )
            self._write_record("airflow", executor.to_record())
            services = [cls(self.state_dir, ports) for cls in classes.values()]
            celery = CeleryParts(self.state_dir)
            if airflow and executor.is_celery:
                celery.preflight()
            for service in services:  # fail before starting anything: a port taken, a binary missing
                if self._pid(service.name) is None:
                    for key in service.port_keys:
                        ensure_port_free(ports[key], f"{service.name} ({key})")
                    service.preflight()
            for group in launch_groups(services):
                self._ensure_running(group)
            workers = recorded_workers(recorded) if spark_workers is None else spark_workers
            cluster = SparkCluster(self.state_dir)
            if workers > 0:
                cluster.start(self._recorded_ports(), workers, self._write_ports)
            elif spark_workers == 0:
                cluster.stop(self._recorded_ports(), self._write_ports)
            if yarn or (yarn is None and RM_PORT_KEYS[0] in recorded):
                YarnCluster(self.state_dir).start(self._recorded_ports(), self._write_ports)
            elif yarn is False:
                YarnCluster(self.state_dir).stop(self._recorded_ports(), self._write_ports)
            self._secured().switch(tls=tls, kerberos=kerberos)
            connect = SparkConnectPart(self.state_dir)
            if spark_connect or (spark_connect is None and connect.is_running(recorded)):
                connect.start(self._recorded_ports(), self._write_ports)
            elif spark_connect is False:
                connect.stop(self._recorded_ports(), self._write_ports)
            if airflow and executor.is_celery:
                celery.start_broker(self._recorded_ports(), self._write_ports)
            if airflow:
                self._airflow(self._recorded_ports()).up()
        return self.status()

    def _secured(self) -> SecuredParts:
        return SecuredParts(self.state_dir, self._recorded_ports, self._write_ports)

    def _check_executor(self, executor: AirflowExecutor | None) -> AirflowExecutor:
        """``executor``, or the recorded one when None; :class:`ExecutorError` when it differs
        from the executor of an Airflow service still running (a live ``pids/airflow-*.pid``)."""
        current = self._recorded_executor()
        if executor is None or executor == current:
            return current
        pids = sorted((self.state_dir / "pids").glob("airflow-*.pid"))
        running = [path.stem for path in pids if running_pid(path) is not None]
        if running:
            raise ExecutorError(
                f"the Airflow of the local stack in {self.state_dir} runs {current.describe()} "
                f"({', '.join(running)} running); run eo-stack down first to get {executor.describe()}"
            )
        return executor

    @staticmethod
    def _kept_port(key: str) -> bool:
        """Ports recorded by the stack's optional parts (Spark, Spark Connect, YARN, the Celery
        broker, the TLS services, the KDC and the Kerberized HBase)."""
        optional = is_spark_key(key) or is_yarn_key(key) or is_secured_key(key)
        return optional or SparkConnectPart.is_key(key) or key == REDIS_PORT_KEY

    def _write_state(self, ports: Mapping[str, int], topology: Topology) -> None:
        self._write_record("ports", dict(ports))
        self._write_record("topology", topology.to_record())

    def _write_record(self, key: str, value: Any) -> None:
        """Set ``key`` of ``stack.json`` to ``value``, keeping its other keys."""
        try:
            state: dict[str, Any] = json.loads(self._state_file.read_text())
        except FileNotFoundError:
            state = {}
        state[key] = value
        self._state_file.write_text(json.dumps(state, indent=2) + "\n")

    def _write_ports(self, ports: Mapping[str, int]) -> None:
        self._write_state(ports, self._recorded_topology())

    def _ensure_running(self, group: list[Service]) -> None:
        """Launch every service of ``group`` that is not running, then wait for each in turn."""
        pids = [self._pid(service.name) or launch(service) for service in group]
        for service, pid in zip(group, pids, strict=True):
            wait_healthy(service, pid)
            service.after_start()

    def down(self) -> None:
        """Stop every service of this stack; returns when none of their processes is left."""
        with self._locked():
            recorded = self._recorded_ports()
            if API_PORT_KEY in recorded and "postgres" in recorded:
                self._airflow(recorded).down()
            SparkConnectPart(self.state_dir).stop(self._recorded_ports(), self._write_ports)
            SparkCluster(self.state_dir).stop(self._recorded_ports(), self._write_ports)
            YarnCluster(self.state_dir).stop(self._recorded_ports(), self._write_ports)
            self._secured().switch(tls=False, kerberos=False)
            CeleryParts(self.state_dir).stop_broker(self._recorded_ports(), self._write_ports)
            services = [cls(self.state_dir, recorded) for cls in reversed(self._classes().values())]
            for group in launch_groups(services):
                # A group at once: the last node of a Kafka cluster stopped alone would wait
                # for a quorum that is gone (its grace, then SIGKILL).
                with ThreadPoolExecutor(max_workers=len(group)) as pool:
                    list(pool.map(stop_service, group))

    def status(self) -> dict[str, dict[str, Any]]:
        """service -> {"pid", "port", "ports", "healthy", "state", "rss_mb"}; state is running|stopped.

        ``port`` is the one clients use; ``ports`` every port the service binds;
        ``rss_mb`` the resident memory of the service's process group (None when stopped).
        The ``schema-registry`` entry adds ``url`` (its Confluent-compatible API). Once Airflow
        was started in this state dir, its four services follow; the ``airflow-api-server``
        entry adds ``url`` and ``login_file``. Spark's and YARN's entries: :meth:`.SparkCluster.status`,
        :meth:`.YarnCluster.status`. With a CeleryExecutor, ``redis`` (its ``url`` without the
        password) and the ``airflow-celery-worker-<n>`` entries are there too.
        """
        recorded = self._recorded_ports()
        result: dict[str, dict[str, Any]] = {}
        for name, cls in self._classes().items():
            pid = self._pid(name)
            service = cls(self.state_dir, recorded)
            answers = pid is not None and all(key in recorded for key in cls.port_keys) and service.healthy()
            result[name] = status_entry(service, pid, healthy=answers)
        if "schema-registry" in recorded:
            result["schema-registry"]["url"] = registry_url(recorded["schema-registry"])
        if MASTER in recorded:
            result.update(SparkCluster(self.state_dir).status(recorded))
        if RM_PORT_KEYS[0] in recorded:
            result.update(YarnCluster(self.state_dir).status(recorded))
        result.update(self._secured().status())
        if SparkConnectPart.is_running(recorded):
            result.update(SparkConnectPart(self.state_dir).status(recorded))
        result.update(CeleryParts(self.state_dir).broker_status(recorded))
        if (self.state_dir / "airflow").is_dir() and API_PORT_KEY in recorded:
            result.update(self._airflow(recorded).status())
        return result

    def is_up(self) -> bool:
        """True when every service of the topology is running and healthy (Airflow aside)."""
        classes = self._classes()
        return all(s["healthy"] for name, s in self.status().items() if name in classes)

    # -- Spark Connect server ----------------------------------------------------
    def spark_connect_up(self) -> int:
        """Start the Spark Connect server (:mod:`.spark_connect`) unless it runs; its port."""
        with self._locked():
            SparkConnectPart(self.state_dir).start(self._recorded_ports(), self._write_ports)
        return self._recorded_ports()[SparkConnectPart.port_keys[0]]

    def spark_connect_down(self) -> None:
        """Stop the Spark Connect server, if it runs."""
        with self._locked():
            SparkConnectPart(self.state_dir).stop(self._recorded_ports(), self._write_ports)

    @property
    def spark_connect_port(self) -> int | None:
        """The running Spark Connect server's port, or None."""
        return self._recorded_ports().get(SparkConnectPart.port_keys[0])

    # -- Spark standalone cluster ----------------------------------------------
    def spark_up(self, workers: int = 2) -> dict[str, dict[str, Any]]:
        """Run the Spark master and exactly ``workers`` workers (the services must be up); return
        the cluster's :meth:`status` entries. Raises like :meth:`up`."""
        with self._locked():
            cluster = SparkCluster(self.state_dir)
            cluster.start(self._recorded_ports(), workers, self._write_ports)
            return cluster.status(self._recorded_ports())

    def spark_down(self) -> None:
        """Stop the Spark cluster (workers, then master) and forget its ports; the services stay up."""
        with self._locked():
            SparkCluster(self.state_dir).stop(self._recorded_ports(), self._write_ports)

    @staticmethod
    def _spark_master_url(ports: Mapping[str, int]) -> str | None:
        return master_url(ports) if MASTER in ports else None

    @property
    def spark_master_url(self) -> str:
        """``spark://127.0.0.1:<port>`` of the running cluster; raises RuntimeError when none was started."""
        url = self._spark_master_url(self._recorded_ports())
        if url is None:
            raise RuntimeError(
                f"local stack in {self.state_dir} runs no Spark cluster (eo-stack up --spark-workers N)"
            )
        return url

    @property
    def spark_workers(self) -> int:
        """How many workers the recorded cluster has (0: no cluster)."""
        return recorded_workers(self._recorded_ports())

    @property
    def spark_executor_python(self) -> Path:
        """The interpreter for ``spark.pyspark.python`` on the cluster: the venv's third-party
        packages without this repository's editable installs (ship the provider as ``--py-files``)."""
        return executor_python(self.state_dir)

    # -- YARN ------------------------------------------------------------------
    def yarn_up(self) -> dict[str, dict[str, Any]]:
        """Run YARN's ResourceManager and NodeManager (the services must be up); return their
        :meth:`status` entries. Raises like :meth:`up`."""
        with self._locked():
            cluster = YarnCluster(self.state_dir)
            cluster.start(self._recorded_ports(), self._write_ports)
            return cluster.status(self._recorded_ports())

    def yarn_down(self) -> None:
        """Stop YARN (NM, then RM) and forget its ports; the services stay up."""
        with self._locked():
            YarnCluster(self.state_dir).stop(self._recorded_ports(), self._write_ports)

    def _yarn_ports(self) -> dict[str, int]:
        recorded = self._recorded_ports()
        if RM_PORT_KEYS[0] not in recorded:
            raise RuntimeError(f"local stack in {self.state_dir} runs no YARN (eo-stack up --yarn)")
        return recorded

    def yarn_stop_nodemanager(self) -> None:
        """Stop the NodeManager alone (its containers with it); the RM keeps running."""
        YarnCluster(self.state_dir).stop_nodemanager(self._yarn_ports())

    def yarn_start_nodemanager(self) -> int:
        """Start the NodeManager again (same node id) and wait until the RM lists it RUNNING;
        returns its pid. Raises RuntimeError when the stack runs no YARN."""
        return YarnCluster(self.state_dir).start_nodemanager(self._yarn_ports())

    @property
    def yarn_nodemanager_pid(self) -> int | None:
        """The running NodeManager's pid (its process group too), None when it is not running."""
        return YarnCluster(self.state_dir).nodemanager_pid()

    @staticmethod
    def _yarn_webapp(ports: Mapping[str, int]) -> str | None:
        return webapp_url(ports[RM_PORT_KEYS[4]]) if RM_PORT_KEYS[4] in ports else None

    @property
    def yarn_webapp_url(self) -> str:
        """``http://127.0.0.1:<port>``: the RM's web UI and REST API; RuntimeError without YARN."""
        return webapp_url(self._yarn_ports()[RM_PORT_KEYS[4]])

    @property
    def hadoop_conf_dir(self) -> Path:
        """The Hadoop client conf dir (``core-site.xml``, ``yarn-site.xml``) for spark-submit's
        ``HADOOP_CONF_DIR``/``YARN_CONF_DIR``; RuntimeError when the stack runs no YARN."""
        self._yarn_ports()
        return client_conf_dir(self.state_dir)

    def yarn_client_env(self) -> dict[str, str]:
        """``HADOOP_CONF_DIR`` and ``YARN_CONF_DIR`` (the client conf dir) while YARN's RM runs,
        else empty: what ``eo-stack env`` exports for spark-submit."""
        if RM_PORT_KEYS[0] not in self._recorded_ports() or self._pid(RESOURCE_MANAGER) is None:
            return {}
        conf = str(client_conf_dir(self.state_dir))
        return {"HADOOP_CONF_DIR": conf, "YARN_CONF_DIR": conf}

    # -- Airflow -------------------------------------------------------------
    def _airflow(self, ports: Mapping[str, int]) -> LocalAirflow:
        postgres = self._service("postgres", ports)
        assert isinstance(postgres, PostgresService)
        config = AirflowConfig(
            state_dir=self.state_dir,
            home=self.state_dir / "airflow",
            port=ports[API_PORT_KEY],
            database=AIRFLOW_DATABASE,
            postgres_dsn=postgres.dsn(),
            conn_env=stack_conn_env(
                postgres.dsn(),
                self._bootstrap(ports),
                self._thrift_ports(ports),
                self._spark_master_url(ports),
                schema_registry_port=ports.get("schema-registry"),
                yarn_webapp_url=self._yarn_webapp(ports),
            ),
            dags_folder=self.dags_folder,
            settings=self.yarn_client_env(),  # spark-submit in tasks finds the RM through it
        )
        return CeleryParts(self.state_dir).airflow(config, self._recorded_executor(), ports)

    def airflow(self) -> LocalAirflow:
        """The stack's Airflow (``url``, ``login_path`` on its ``config``); raises before the first ``up``."""
        recorded = self._recorded_ports()
        if API_PORT_KEY not in recorded:
            raise RuntimeError(f"local stack in {self.state_dir} has never been started (no stack.json)")
        return self._airflow(recorded)

    # -- connection info -----------------------------------------------------
    def _port(self, name: str) -> int:
        recorded = self._recorded_ports()
        if name not in recorded:
            raise RuntimeError(f"local stack in {self.state_dir} has never been started (no stack.json)")
        return recorded[name]

    @property
    def ledger_dsn(self) -> str:
        """DSN of database ``eo`` (contains the password: never log it)."""
        service = self._service("postgres", self._recorded_ports())
        assert isinstance(service, PostgresService)
        return service.dsn()

    def _bootstrap(self, ports: Mapping[str, int]) -> str:
        return ",".join(f"{LOOPBACK}:{ports[name]}" for name in self._recorded_topology().instances("kafka"))

    @property
    def kafka_bootstrap(self) -> str:
        """``host:port`` of every broker, comma-separated (``bootstrap.servers``)."""
        self._port("kafka")
        return self._bootstrap(self._recorded_ports())

    @property
    def hbase_host(self) -> str:
        return LOOPBACK

    @property
    def hbase_port(self) -> int:
        """The first Thrift server's port."""
        return self._port("hbase-thrift")

    @property
    def hbase_thrift_ports(self) -> list[int]:
        """Every Thrift server's port, the first one first."""
        self._port("hbase-thrift")
        return self._thrift_ports(self._recorded_ports())

    def _thrift_ports(self, ports: Mapping[str, int]) -> list[int]:
        return [ports[name] for name in self._recorded_topology().instances("hbase-thrift")]

    @property
    def schema_registry_url(self) -> str:
        """Base URL of the Schema Registry's Confluent-compatible API (``http://127.0.0.1:<port>/apis/ccompat/v7``)."""
        return registry_url(self._port("schema-registry"))

    def conn_env(self) -> dict[str, str]:
        """``AIRFLOW_CONN_*`` name -> value for this stack (``..._EO_LEDGER_TLS``: the ledger over
        verify-full TLS with the stack's client certificate for ``eo_tls``); ``..._SPARK_STANDALONE`` while a
        cluster runs, ``..._SPARK_YARN`` while YARN runs, ``..._AIRFLOW_API`` (the admin's
        login: ``eo-ledger seek`` asks it whether a stream DAG is paused) while Airflow's API
        server runs."""
        recorded = self._recorded_ports()
        env = stack_conn_env(
            self.ledger_dsn,
            self.kafka_bootstrap,
            self.hbase_thrift_ports,
            self._spark_master_url(recorded),
            schema_registry_port=recorded.get("schema-registry"),
            yarn_webapp_url=self._yarn_webapp(recorded),
        )
        if "postgres" in recorded:  # the stack's PostgreSQL always serves TLS
            client = stack_client_cert(self.state_dir, TLS_ROLE)
            env["AIRFLOW_CONN_EO_LEDGER_TLS"] = ledger_tls_connection(
                recorded["postgres"],
                TLS_ROLE,
                DATABASE,
                stack_pki(self.state_dir).ca,
                client.cert,
                client.key,
            )
        env.update(self._secured().conn_env())  # eo-stack up --tls, --kerberos
        if SparkConnectPart.is_running(recorded):  # eo-stack up --spark-connect
            env[SparkConnectPart.conn_var] = SparkConnectPart(self.state_dir).connection(recorded)
        if API_PORT_KEY in recorded:
            airflow = self._airflow(recorded)
            if airflow.api_server_running():
                password = airflow.config.secrets()["admin_password"]
                env["AIRFLOW_CONN_AIRFLOW_API"] = airflow_api_connection(
                    airflow.config.url, ADMIN_USER, password
                )
        return env
