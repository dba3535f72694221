"""What one spark-submit of the write application gets for its epoch: a pure computation.

:func:`write_submission` turns the epoch (id, fencing token, the task instance that votes),
the pipeline's submission conf and the driver's environment into a :class:`WriteSubmission`:
the ``--conf`` settings, ``--py-files``, ``--files``, the application's arguments, and the
environment the spark-submit process is given (client deploy mode only). It reads nothing
and writes nothing; the write operator (:mod:`airflow_provider_eo.operators.write`) resolves
the inputs, writes the files and hands the result to the Spark provider's
``SparkSubmitHook``.

Where the driver's environment (connections, the spec: secrets) goes:

* client deploy mode: the spark-submit process's environment, which the driver inherits
  (never the provider's ``env_vars``, which it turns into ``--conf`` arguments on YARN and
  Kubernetes masters);
* cluster deploy mode (YARN): a private file shipped with the application through YARN's
  distributed cache (``--files``), named to the driver by its base name
  (``--driver-env-file``, :mod:`airflow_provider_eo.spark.driver.driver_environment`);
  nothing of it is in the conf, the properties, ``appMasterEnv``/``executorEnv`` or the
  arguments;
* cluster deploy mode on a standalone or Kubernetes master is refused
  (:func:`check_deploy_mode`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.operators.spark_submission import is_kubernetes, is_standalone
from airflow_provider_eo.spark.driver.driver_environment import DRIVER_ENV_ARG


@dataclass(frozen=True)
class WriteSubmission:
    """The epoch's part of one spark-submit of the write application.

    ``conf`` are the ``--conf`` settings, ``py_files`` the ``--py-files`` value and
    ``files`` the ``--files`` value (None: none), ``application_args`` the application's
    arguments (names and ids only), ``environment`` what the spark-submit process gets in
    its environment (empty in cluster deploy mode). ``environment`` holds secrets: ``repr``
    hides it.
    """

    conf: dict[str, str]
    py_files: str | None
    files: str | None
    application_args: list[str]
    environment: dict[str, str] = field(repr=False)


def check_deploy_mode(pipeline: str, master: str, deploy_mode: str) -> None:
    """Raise :class:`ConfigError` for cluster deploy mode on a standalone ``master``, which
    Spark refuses for Python applications, or on a Kubernetes one, where the driver's
    connections would be written into the driver pod's spec; return otherwise."""
    if deploy_mode != "cluster":
        return
    if is_standalone(master):
        raise ConfigError(
            f"pipeline {pipeline}: deploy_mode 'cluster' with master {master!r}: Spark runs Python "
            "applications on a standalone cluster in client deploy mode only"
        )
    if is_kubernetes(master):
        raise ConfigError(
            f"pipeline {pipeline}: deploy_mode 'cluster' with master {master!r}: on Kubernetes the "
            "driver's connections would be written into the driver pod's spec "
            "(spark.kubernetes.driverEnv); use deploy_mode 'client' (docs/operators.md)"
        )


def application_args(
    *,
    pipeline: str,
    epoch_id: str | int,
    fencing_token: str | None,
    actor: Actor,
    conn_id_args: Sequence[str],
) -> list[str]:
    """The write application's arguments: ``--pipeline P --epoch-id N``, ``--fencing-token T``
    when a token is given (non-empty), ``--actor-kind K --actor A`` (the task instance the vote
    is recorded as), then ``conn_id_args`` (connection ids, never their definitions)."""
    args = ["--pipeline", pipeline, "--epoch-id", str(epoch_id)]
    if fencing_token:
        args += ["--fencing-token", str(fencing_token)]
    return [*args, "--actor-kind", actor.kind, "--actor", actor.name, *conn_id_args]


def write_submission(
    *,
    args: list[str],
    conf: Mapping[str, str],
    py_files: str | None,
    package_zip: str | None,
    files: str | None,
    env: Mapping[str, str],
    env_file: str | None,
    deploy_mode: str,
) -> WriteSubmission:
    """The submission of the application with arguments ``args``: ``conf`` (the pipeline's
    with the start-up settings), ``py_files`` (the operator's) followed by ``package_zip``
    (None: not shipped), ``files`` (the operator's), and the driver's environment placed as
    ``deploy_mode`` requires (see the module doc): ``env`` itself in client deploy mode; in
    cluster deploy mode ``env_file``, the private file holding it, is added to ``--files``
    and its base name follows ``--driver-env-file``. Pure: the same inputs give an equal
    result. Raises ``ValueError`` for cluster deploy mode without ``env_file``."""
    shipped = ",".join(filter(None, [py_files, package_zip])) or None
    if deploy_mode == "cluster":
        if env_file is None:
            raise ValueError("cluster deploy mode: the driver's environment travels in a file; none given")
        shipped_files = ",".join(filter(None, [files, env_file]))
        arguments = [*args, DRIVER_ENV_ARG, os.path.basename(env_file)]
        return WriteSubmission(dict(conf), shipped, shipped_files, arguments, {})
    return WriteSubmission(dict(conf), shipped, files or None, list(args), dict(env))
