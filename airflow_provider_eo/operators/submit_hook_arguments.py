"""Which ``SparkSubmitHook`` arguments a write submission takes from where.

The write operator submits through the Spark provider's public hook API: it builds one
``SparkSubmitHook`` per submission and calls ``submit``. The hook's constructor arguments
come from three places:

* the operator's constructor (resources, deploy mode, the connection id, the name, any
  ``SparkSubmitOperator`` keyword a DAG passes): kept as given, :func:`constant_arguments`;
* the operator's template fields among them (``files``, ``jars``, ``env_vars``, ...): read
  from the operator when ``execute`` runs, rendered, :func:`rendered_arguments`;
* the epoch's submission (:class:`~airflow_provider_eo.operators.write_submission.WriteSubmission`):
  :data:`SUBMISSION_ARGUMENTS`, which override both (the operator's ``py_files`` and
  ``files`` are shipped as part of them).

Tracking: the write step waits for spark-submit, whose exit code is the driver's, and in
YARN cluster deploy mode then follows the application through the ResourceManager itself
(:mod:`~airflow_provider_eo.operators.yarn_tracking`). So ``yarn_track_via_rm_api`` is
accepted (:data:`OWN_TRACKING`: the write step's own RM tracking is always on in YARN
cluster mode; the operator refuses it elsewhere) but never handed to the hook, whose
detached tracking would return before the application ends; ``track_driver_via_k8s_api``
(:data:`DETACHED_TRACKING`) raises ``ValueError`` (Kubernetes cluster mode is refused anyway).

The hook's parameters are read from the installed provider's signature, so a keyword the
provider adds reaches the hook too. OpenLineage's Spark property injection, which the
provider's ``execute`` does, is :func:`openlineage_properties`.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection, Mapping
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

#: The keyword parameters of the installed provider's ``SparkSubmitHook``.
HOOK_PARAMETERS = frozenset(inspect.signature(SparkSubmitHook).parameters)
#: What each submission sets itself (the epoch's, :mod:`.write_submission`).
SUBMISSION_ARGUMENTS = frozenset({"conf", "py_files", "files", "application_args"})
#: The provider's detached tracking modes the write step refuses (see the module doc).
DETACHED_TRACKING = ("track_driver_via_k8s_api",)
#: Accepted, never handed to the hook: the write step tracks YARN applications itself.
OWN_TRACKING = frozenset({"yarn_track_via_rm_api"})
#: ``SparkSubmitOperator`` keywords that ask for OpenLineage properties in the Spark conf.
OPENLINEAGE_OPTIONS = ("openlineage_inject_parent_job_info", "openlineage_inject_transport_info")
#: Their defaults in the installed provider (its ``[openlineage]`` settings, read when it loaded).
OPENLINEAGE_DEFAULTS = {
    name: inspect.signature(SparkSubmitOperator).parameters[name].default for name in OPENLINEAGE_OPTIONS
}


def constant_arguments(arguments: Mapping[str, Any], template_fields: Collection[str]) -> dict[str, Any]:
    """The hook's arguments among the operator's constructor ``arguments`` that are neither
    templated (those are read when execute runs) nor set by every submission.

    :data:`OWN_TRACKING` keywords are left out. Raises ``ValueError`` naming a
    :data:`DETACHED_TRACKING` option set true.
    """
    detached = [name for name in DETACHED_TRACKING if arguments.get(name)]
    if detached:
        raise ValueError(
            f"{', '.join(detached)}: the write step waits for spark-submit, whose exit code is the "
            "driver's; the provider's detached tracking is not supported"
        )
    return {
        name: value
        for name, value in arguments.items()
        if name in HOOK_PARAMETERS
        and name not in template_fields
        and name not in SUBMISSION_ARGUMENTS
        and name not in OWN_TRACKING
    }


def rendered_arguments(operator: SparkSubmitOperator) -> dict[str, Any]:
    """The hook's arguments that are template fields of ``operator`` (its public attributes,
    rendered by the time ``execute`` runs), the submission's own excepted."""
    return {
        name: getattr(operator, name)
        for name in operator.template_fields
        if name in HOOK_PARAMETERS and name not in SUBMISSION_ARGUMENTS
    }


def openlineage_options(arguments: Mapping[str, Any]) -> dict[str, bool]:
    """Each :data:`OPENLINEAGE_OPTIONS` keyword as given in ``arguments``, else the
    provider's default for it (its ``[openlineage]`` setting, read when the provider loaded)."""
    return {name: bool(arguments.get(name, OPENLINEAGE_DEFAULTS[name])) for name in OPENLINEAGE_OPTIONS}


def openlineage_properties(conf: dict[str, Any], options: Mapping[str, bool], context: Any) -> dict[str, Any]:
    """``conf`` with the OpenLineage parent-job and transport properties the ``options`` ask
    for, added as the provider's ``execute`` adds them; ``conf`` itself when none is asked."""
    from airflow.providers.common.compat.openlineage.utils.spark import (
        inject_parent_job_information_into_spark_properties,
        inject_transport_information_into_spark_properties,
    )

    if options.get("openlineage_inject_parent_job_info"):
        conf = inject_parent_job_information_into_spark_properties(conf, context)
    if options.get("openlineage_inject_transport_info"):
        conf = inject_transport_information_into_spark_properties(conf, context)
    return conf
