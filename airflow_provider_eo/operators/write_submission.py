"""What one spark-submit of the write application gets for its epoch: a pure computation.

:func:`write_submission` turns the epoch (id, fencing token, the task instance that votes),
the pipeline's submission conf and the driver's environment into a :class:`WriteSubmission`:
the ``--conf`` settings, ``--py-files``, the text of the private properties file (cluster
deploy mode only) and the application's arguments, and the environment the spark-submit
process is given (client deploy mode only). It reads nothing and writes nothing; the write
operator (:mod:`airflow_provider_eo.operators.write`) resolves the inputs and hands the
result to the Spark provider's ``SparkSubmitHook``.

Where the driver's environment (connections, the spec: secrets) goes:

* client deploy mode: the spark-submit process's environment, which the driver inherits
  (never the provider's ``env_vars``, which it turns into ``--conf`` arguments on YARN and
  Kubernetes masters);
* cluster deploy mode: the properties file, as ``spark.yarn.appMasterEnv.*`` and
  ``spark.kubernetes.driverEnv.*`` (:data:`CLUSTER_ENV_PREFIXES`), beside the conf, which
  then is not on the command line either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.operators.spark_submission import is_standalone

#: Where cluster deploy mode puts the driver's environment (YARN, Kubernetes).
CLUSTER_ENV_PREFIXES = ("spark.yarn.appMasterEnv.", "spark.kubernetes.driverEnv.")


@dataclass(frozen=True)
class WriteSubmission:
    """The epoch's part of one spark-submit of the write application.

    ``conf`` are the ``--conf`` settings (empty in cluster deploy mode: the properties file
    carries them), ``py_files`` the ``--py-files`` value (None: none), ``properties`` the
    text of the private properties file (None: no file, client deploy mode),
    ``application_args`` the application's arguments (names and ids only), ``environment``
    what the spark-submit process gets in its environment (empty in cluster deploy mode).
    ``properties`` and ``environment`` hold secrets: ``repr`` hides them.
    """

    conf: dict[str, str]
    py_files: str | None
    application_args: list[str]
    properties: str | None = field(repr=False)
    environment: dict[str, str] = field(repr=False)


def check_deploy_mode(pipeline: str, master: str, deploy_mode: str) -> None:
    """Raise :class:`ConfigError` for cluster deploy mode on a standalone ``master``, which
    Spark refuses for Python applications; return otherwise."""
    if is_standalone(master) and deploy_mode == "cluster":
        raise ConfigError(
            f"pipeline {pipeline}: deploy_mode 'cluster' with master {master!r}: Spark runs Python "
            "applications on a standalone cluster in client deploy mode only"
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


def properties_text(conf: Mapping[str, object], env: Mapping[str, str]) -> str:
    """Java properties: ``conf``, then every variable of ``env`` under each of
    :data:`CLUSTER_ENV_PREFIXES`; one ``key=value`` line each, values escaped."""
    lines = [f"{key}={_escape_property(str(value))}" for key, value in conf.items()]
    lines += [
        f"{prefix}{name}={_escape_property(value)}"
        for name, value in env.items()
        for prefix in CLUSTER_ENV_PREFIXES
    ]
    return "".join(f"{line}\n" for line in lines)


def write_submission(
    *,
    args: list[str],
    conf: Mapping[str, str],
    py_files: str | None,
    package_zip: str | None,
    env: Mapping[str, str],
    deploy_mode: str,
) -> WriteSubmission:
    """The submission of the application with arguments ``args``: ``conf`` (the pipeline's
    with the start-up settings), ``py_files`` (the operator's) followed by ``package_zip``
    (None: not shipped), and the driver's environment ``env`` placed as ``deploy_mode``
    requires (see the module doc). Pure: the same inputs give an equal result."""
    shipped = ",".join(filter(None, [py_files, package_zip])) or None
    if deploy_mode == "cluster":
        return WriteSubmission({}, shipped, list(args), properties_text(conf, env), {})
    return WriteSubmission(dict(conf), shipped, list(args), None, dict(env))


def _escape_property(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace("=", "\\=").replace(":", "\\:")
