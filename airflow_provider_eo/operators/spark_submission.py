"""How the write step's pipeline settings become spark-submit settings: master and resources.

``spark.master`` overrides the Spark connection's master (:class:`MasterOverrideSparkSubmitHook`);
``spark.resources`` become the Spark provider's resource arguments (:func:`resource_options`),
mapped for the master they will run on.
"""

from __future__ import annotations

from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from airflow_provider_eo.config.specs import SparkResources


def is_standalone(master: str | None) -> bool:
    """True for a Spark standalone master URL (``spark://host:port``, HA lists too)."""
    return bool(master) and str(master).startswith("spark://")


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


class MasterOverrideSparkSubmitHook(SparkSubmitHook):
    """``SparkSubmitHook`` whose master is ``master`` when given, else the connection's.

    The override is applied where the hook resolves its connection, so everything the
    hook derives from the master (YARN, Kubernetes, standalone driver tracking) follows it.
    A missing connection then only costs the hook's log line; without ``master`` it falls
    back to YARN as the plain hook does.
    """

    def __init__(self, *, master: str | None = None, **kwargs: Any) -> None:
        self._master_override = master
        super().__init__(**kwargs)

    def _resolve_connection(self) -> dict[str, Any]:
        resolved = super()._resolve_connection()
        if self._master_override:
            resolved["master"] = self._master_override
        return resolved
