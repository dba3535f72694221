"""How the write step's pipeline settings become spark-submit settings: master and resources.

``spark.master`` overrides the Spark connection's master. The Spark provider takes its
master from a connection only, so the override is a connection: :func:`master_connection`
derives one from the pipeline's Spark connection (same extra: deploy mode, spark binary,
queue, namespace, ...) whose host is the override, under an id fixed when the operator is
built (:func:`master_connection_id`); :func:`connection_in_environment` makes Airflow
resolve that id while the submission runs, through its documented environment-variable
connections. :func:`connection_master` is the master the provider's hook derives from a
connection. ``spark.resources`` become the Spark provider's resource arguments
(:func:`resource_options`), mapped for the master they will run on. The driver's
environment is set on the spark-submit process (:func:`process_environment`) in client
deploy mode; YARN cluster deploy mode ships it as the driver's environment file
(:mod:`~airflow_provider_eo.operators.write_submission`).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from airflow.sdk import BaseHook, Connection
from airflow.sdk.exceptions import AirflowException

from airflow_provider_eo.clients.connections import env_var_name
from airflow_provider_eo.config.specs import SparkResources

#: The master ``SparkSubmitHook`` uses when it cannot load its connection.
FALLBACK_MASTER = "yarn"


def is_standalone(master: str | None) -> bool:
    """True for a Spark standalone master URL (``spark://host:port``, HA lists too)."""
    return bool(master) and str(master).startswith("spark://")


def is_yarn(master: str | None) -> bool:
    """True for a YARN master (``yarn``, as the Spark provider tells one: the word in the URL)."""
    return bool(master) and "yarn" in str(master)


def is_kubernetes(master: str | None) -> bool:
    """True for a Kubernetes master URL (``k8s://...``)."""
    return bool(master) and str(master).startswith("k8s://")


def resource_options(resources: SparkResources, master: str | None) -> dict[str, Any]:
    """``SparkSubmitOperator`` keyword arguments for ``resources`` on ``master`` (None: the connection's).

    ``driver_cores`` becomes ``spark.driver.cores`` (Spark applies it in cluster mode). On a
    standalone master, which ignores ``--num-executors``, ``num_executors`` N becomes
    ``--total-executor-cores`` N x ``executor_cores`` with ``executor_cores`` defaulting to 1
    (standalone otherwise gives one executor all of a worker's cores); elsewhere it is
    ``--num-executors``.
    """
    options: dict[str, Any] = {
        "driver_memory": resources.driver_memory,
        "executor_memory": resources.executor_memory,
        "executor_cores": resources.executor_cores,
        "conf": {} if resources.driver_cores is None else {"spark.driver.cores": str(resources.driver_cores)},
    }
    if resources.num_executors is not None and is_standalone(master):
        cores = resources.executor_cores or 1
        options.update(executor_cores=cores, total_executor_cores=resources.num_executors * cores)
    else:
        options["num_executors"] = resources.num_executors
    return options


def spark_connection(conn_id: str) -> Connection | None:
    """The Spark connection ``conn_id``, resolved through Airflow now (``BaseHook.get_connection``).

    None when Airflow cannot load it (an ``AirflowException``, e.g. no such connection): the
    Spark provider's hook then logs that and falls back to :data:`FALLBACK_MASTER`, with no
    extra. Other errors propagate, as they do from the hook.
    """
    try:
        return BaseHook.get_connection(conn_id)
    except AirflowException:
        return None


def connection_master(connection: Connection | None) -> str:
    """The master URL ``SparkSubmitHook`` (provider 6.3) derives from ``connection``.

    A ``spark`` connection whose host is a URL (contains ``://``) or that has no port gives its
    host (``local[*]``, ``yarn``, ``spark://m:7077``, ``k8s://https://k:443``); any other gives
    ``<conn_type>://<host>`` (a connection written as the URI ``spark://m:7077``); a port is
    then appended as ``:<port>``. No connection (None): :data:`FALLBACK_MASTER`.
    A unit test checks this rule against the master the installed hook puts on the
    spark-submit command line.
    """
    if connection is None:
        return FALLBACK_MASTER
    host = connection.host
    if connection.conn_type == "spark" and host and ("://" in host or not connection.port):
        master = host
    else:
        master = f"{connection.conn_type}://{host or ''}"
    return f"{master}:{connection.port}" if connection.port else master


def master_connection_id(spark_conn_id: str, master: str) -> str:
    """The id of the connection that is ``spark_conn_id`` with its master replaced by ``master``.

    Deterministic (the same task parses to the same id), pure (no lookup), and made of
    letters, digits and underscores so that it is a valid ``AIRFLOW_CONN_<ID>`` name.
    """
    digest = hashlib.sha256(f"{spark_conn_id}\0{master}".encode()).hexdigest()[:12]
    return f"{re.sub(r'[^0-9A-Za-z_]', '_', spark_conn_id)}__eo_master_{digest}"


def master_connection(conn_id: str, connection: Connection | None, master: str) -> Connection:
    """``connection`` (None: an empty one) as connection ``conn_id`` whose master is ``master``.

    A ``spark`` connection with host ``master`` and no port, so :func:`connection_master`
    (and the hook) give exactly ``master``; description, login, password, schema and extra
    (``deploy-mode``, ``spark-binary``, ``queue``, ``namespace``, ...) are ``connection``'s.
    """
    base = connection or Connection(conn_id=conn_id, conn_type="spark")
    return Connection(
        conn_id=conn_id,
        conn_type="spark",
        description=base.description,
        host=master,
        login=base.login,
        password=base.password,
        schema=base.schema,
        port=None,
        extra=base.extra,
    )


@contextmanager
def process_environment(variables: Mapping[str, str]) -> Iterator[None]:
    """Set ``variables`` in this process's environment while the block runs, then restore
    each one's previous state (normally: absent), errors included.

    Child processes (``spark-submit`` and, in client deploy mode, the driver it runs)
    inherit them; unlike the provider's ``env_vars``, which it turns into ``--conf``
    arguments on YARN and Kubernetes masters, they never appear on a command line.
    """
    previous = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def connection_in_environment(connection: Connection) -> AbstractContextManager[None]:
    """Let Airflow resolve ``connection`` by its id while the block runs: ``AIRFLOW_CONN_<ID>``
    set to ``connection.as_json()`` (Airflow's documented environment-variable connections,
    looked up before any other secrets backend) through :func:`process_environment`."""
    return process_environment({env_var_name(connection.conn_id): connection.as_json()})
