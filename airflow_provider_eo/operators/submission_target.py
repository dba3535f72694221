"""Where a write submission goes, and every check that can refuse it before spark-submit.

:func:`submission_target` resolves the Spark connection and the master (``spark.master``
over the connection's), then refuses, with a ``ConfigError`` naming the pipeline and the
cause, before anything is submitted (the epoch stays as it was):

* cluster deploy mode on a standalone or Kubernetes master (:func:`.check_deploy_mode`);
* a ``--py-files`` entry on this machine that does not exist (:func:`.check_local_files`);
* ``yarn_track_via_rm_api=True`` outside YARN cluster deploy mode;
* on a YARN master: cluster deploy mode without the RM's address (the Spark connection's
  extra ``yarn_resourcemanager_webapp_address``), and, wherever that address is set, an RM
  that does not answer, an unknown queue or a container above the queue's maximum
  allocation (:func:`.check_yarn_submission`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow.sdk import Connection

from airflow_provider_eo.clients.yarn_resource_manager import ResourceManager
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.operators.spark_submission import connection_master, is_yarn, spark_connection
from airflow_provider_eo.operators.submission_files import check_local_files
from airflow_provider_eo.operators.write_submission import check_deploy_mode
from airflow_provider_eo.operators.yarn_containers import driver_container, executor_container
from airflow_provider_eo.operators.yarn_preflight import check_yarn_submission
from airflow_provider_eo.operators.yarn_submission import RM_ADDRESS_EXTRA, resource_manager, submission_queue

#: Operator settings that are spark-submit options and size the containers (Spark conf keys).
SIZING_OPTIONS = {
    "driver_memory": "spark.driver.memory",
    "executor_memory": "spark.executor.memory",
    "executor_cores": "spark.executor.cores",
}


@dataclass(frozen=True)
class SubmissionTarget:
    """The Spark connection (None: Airflow has none), the master, the deploy mode and, on a
    YARN master whose connection names one, its ResourceManager (else None)."""

    connection: Connection | None
    master: str
    deploy_mode: str
    rm: ResourceManager | None

    @property
    def yarn_cluster(self) -> bool:
        """Whether the driver runs in a YARN container (YARN master, cluster deploy mode)."""
        return is_yarn(self.master) and self.deploy_mode == "cluster"


def sizing_conf(conf: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, str]:
    """``conf`` with the operator's ``driver_memory``/``executor_memory``/``executor_cores``
    (spark-submit options, which win over the conf) folded in as Spark conf keys."""
    sized = {str(k): str(v) for k, v in conf.items()}
    for option, key in SIZING_OPTIONS.items():
        if settings.get(option):
            sized[key] = str(settings[option])
    return sized


def submission_target(
    *,
    spec: PipelineSpec,
    spark_conn_id: str,
    conf: Mapping[str, Any],
    settings: Mapping[str, Any],
    py_files: str | None,
    track_via_rm_api: bool = False,
) -> SubmissionTarget:
    """Resolve and check the submission of ``spec``'s write (see the module doc).

    ``conf`` is the operator's rendered conf, ``settings`` its constructor's keywords given
    to the hook (``driver_memory``, ``yarn_queue``, ``yarn_rm_auth``, ...), ``py_files`` its
    rendered ``py_files``, ``track_via_rm_api`` its ``yarn_track_via_rm_api``. Raises ``ConfigError``, or
    ``ResourceManagerUnavailable`` / ``ResourceManagerRefused`` from the RM.
    """
    pipeline, deploy_mode = spec.name, spec.spark.deploy_mode
    connection = spark_connection(spark_conn_id)
    master = spec.spark.master or connection_master(connection)
    check_deploy_mode(pipeline, master, deploy_mode)
    check_local_files(pipeline, py_files, {str(k): str(v) for k, v in conf.items()})
    target = SubmissionTarget(connection, master, deploy_mode, None)
    if track_via_rm_api and not target.yarn_cluster:
        raise ConfigError(
            f"pipeline {pipeline}: yarn_track_via_rm_api=True needs master yarn and deploy_mode "
            f"'cluster' (master {master!r}, deploy_mode {deploy_mode!r})"
        )
    if not is_yarn(master):
        return target
    rm = resource_manager(connection, spark_conn_id, settings.get("yarn_rm_auth"))
    if rm is None:
        if deploy_mode == "cluster":
            raise ConfigError(
                f"pipeline {pipeline}: YARN cluster deploy mode: the write step tracks the application "
                f"through the ResourceManager; set {RM_ADDRESS_EXTRA} (e.g. http://rm:8088) in the extra "
                f"of Spark connection {spark_conn_id!r}"
            )
        return target
    sized = sizing_conf(conf, settings)
    containers = [driver_container(sized, deploy_mode), executor_container(sized)]
    queue = submission_queue(settings.get("yarn_queue"), connection, sized)
    check_yarn_submission(pipeline=pipeline, rm=rm, queue=queue, containers=containers)
    return SubmissionTarget(connection, master, deploy_mode, rm)
