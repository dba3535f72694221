"""Checks of a YARN write submission before spark-submit: cheap RM REST calls, no application.

:func:`check_yarn_submission` asks the ResourceManager for its scheduler's queues
(``GET /ws/v1/cluster/scheduler``) and refuses, naming the pipeline, the connection and
the cause:

* an RM that does not answer (nothing listening, a timeout, 5xx):
  ``ResourceManagerUnavailable`` (Airflow retries the step), or refuses (401, 403, ...):
  ``ResourceManagerRefused``;
* a queue the scheduler does not have, or a parent queue (applications go to leaf queues):
  ``ConfigError`` listing the leaf queues;
* a container larger than the queue's maximum allocation
  (:mod:`~airflow_provider_eo.operators.yarn_containers`), which YARN would refuse:
  ``ConfigError`` with the sizes.

Nothing is submitted, reserved or written by a check; the epoch stays as it was.
"""

from __future__ import annotations

from collections.abc import Sequence

from airflow_provider_eo.clients.yarn_resource_manager import ResourceManager, YarnQueue
from airflow_provider_eo.errors import ClusterAccessError, ConfigError
from airflow_provider_eo.operators.yarn_containers import Container


def find_queue(queues: Sequence[YarnQueue], queue: str) -> YarnQueue | None:
    """The queue ``queue`` names: a full path (``root.etl``) or a leaf's own name (``etl``)."""
    by_path = [q for q in queues if q.path == queue]
    if by_path:
        return by_path[0]
    leaves = [q for q in queues if q.leaf and q.name == queue]
    return leaves[0] if len(leaves) == 1 else None


def check_yarn_submission(
    *, pipeline: str, rm: ResourceManager, queue: str, containers: Sequence[Container]
) -> YarnQueue:
    """Check ``queue`` and the ``containers`` against the RM ``rm`` (see the module doc);
    returns the queue. Raises ``ResourceManagerUnavailable`` / ``ResourceManagerRefused``
    when the RM does not answer or refuses, ``ConfigError`` for the queue or a container."""
    try:
        queues = rm.queues()
    except ClusterAccessError as exc:
        raise type(exc)(f"pipeline {pipeline}: {exc}") from None
    found = find_queue(queues, queue)
    where = f"pipeline {pipeline}: YARN queue {queue!r} (ResourceManager {rm.shown_url}, {rm.where})"
    leaves = ", ".join(sorted(q.path for q in queues if q.leaf)) or "none"
    if found is None:
        raise ConfigError(f"{where}: the scheduler has no such queue (leaf queues: {leaves})")
    if not found.leaf:
        raise ConfigError(f"{where}: a parent queue takes no applications (leaf queues: {leaves})")
    for container in containers:
        limit_mb, limit_vcores = found.maximum_memory_mb, found.maximum_vcores
        if limit_mb is not None and container.memory_mb > limit_mb:
            raise ConfigError(
                f"{where}: the {container.role}'s container needs {container.memory_mb} MB "
                f"({container.sizing}), more than the queue's maximum allocation of {limit_mb} MB "
                "(yarn.scheduler.maximum-allocation-mb); YARN would refuse the application"
            )
        if limit_vcores is not None and container.vcores > limit_vcores:
            raise ConfigError(
                f"{where}: the {container.role}'s container needs {container.vcores} vcores, more "
                f"than the queue's maximum allocation of {limit_vcores} "
                "(yarn.scheduler.maximum-allocation-vcores); YARN would refuse the application"
            )
    return found
