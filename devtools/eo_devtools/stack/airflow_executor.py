"""Which executor the stack's Airflow runs, and the settings a Celery deployment of it needs.

``eo-stack up`` runs the LocalExecutor by default; ``--executor celery --celery-workers N``
runs the CeleryExecutor instead: Redis as the broker (:mod:`.redis_broker`), the task
results in the stack's PostgreSQL (the Airflow metadata database, ``db+postgresql...``), and
N workers (:mod:`.celery_worker`). The choice is recorded in ``stack.json`` under
``airflow``, so a later ``up`` without the flags keeps it; changing it while Airflow runs
needs ``eo-stack down`` first.

:data:`CELERY_SETTINGS` are what this provider needs from any Celery deployment
(docs/scale.md, "Production topology"); the broker URL and the result backend's DSN hold
passwords and travel only in environment variables.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from eo_devtools.stack.airflow_config import AirflowConfig
from eo_devtools.stack.celery_worker import BROKER_URL_ENV

LOCAL = "local"
CELERY = "celery"
EXECUTOR_CLASSES: Mapping[str, str] = {LOCAL: "LocalExecutor", CELERY: "CeleryExecutor"}
MAX_CELERY_WORKERS = 4
WRITE_STEP_BOUND_S = 60 * 60
"""The longest a write task may run: its ``execution_timeout``, the pipeline's
``timeouts.write_minutes`` (60 by default)."""

CELERY_SETTINGS: Mapping[str, str] = {
    # a task's message is acknowledged when the task ends, not when a worker takes it: a
    # worker lost mid-task leaves the message with the broker instead of losing it
    "AIRFLOW__CELERY__TASK_ACKS_LATE": "True",
    # a worker reserves no message beyond the ones it runs: none waits behind a long write
    "AIRFLOW__CELERY__WORKER_PREFETCH_MULTIPLIER": "1",
    # Redis hands an unacknowledged message to another worker after this long: it must
    # exceed the longest task (the write's execution_timeout), or a running write's message
    # is delivered a second time
    "AIRFLOW__CELERY_BROKER_TRANSPORT_OPTIONS__VISIBILITY_TIMEOUT": str(2 * WRITE_STEP_BOUND_S),
    # a task whose worker died stops heartbeating: it is failed, and retried on another
    # worker, after 30 s (RECOVERY_SETTINGS recommends 60 s for production)
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "30",
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "5",
}
"""Celery settings of the stack's Airflow (every process gets them)."""


class ExecutorError(RuntimeError):
    """An executor choice that cannot run, or one that differs from the running Airflow's."""


@dataclass(frozen=True)
class AirflowExecutor:
    """``kind`` ``local`` or ``celery``; a Celery executor's ``celery_workers`` (1 to
    :data:`MAX_CELERY_WORKERS`) each run ``concurrency`` tasks at once."""

    kind: str = LOCAL
    celery_workers: int = 0
    concurrency: int = 2

    def __post_init__(self) -> None:
        if self.kind not in EXECUTOR_CLASSES:
            raise ExecutorError(f"executor: {self.kind!r} is not one of {sorted(EXECUTOR_CLASSES)}")
        if self.kind == CELERY and not 1 <= self.celery_workers <= MAX_CELERY_WORKERS:
            raise ExecutorError(
                f"executor: --celery-workers must be from 1 to {MAX_CELERY_WORKERS}, "
                f"got {self.celery_workers}"
            )
        if self.kind == LOCAL and self.celery_workers:
            raise ExecutorError("executor: --celery-workers needs --executor celery")

    @classmethod
    def from_record(cls, record: Mapping[str, Any] | None) -> AirflowExecutor:
        """The executor recorded in ``stack.json`` (LocalExecutor when none is)."""
        return cls(**{key: value for key, value in (record or {}).items() if key in cls.__dataclass_fields__})

    def to_record(self) -> dict[str, Any]:
        """The ``stack.json`` form."""
        return asdict(self)

    @property
    def is_celery(self) -> bool:
        return self.kind == CELERY

    def describe(self) -> str:
        """``CeleryExecutor with 2 worker(s)`` / ``LocalExecutor`` (for messages)."""
        name = EXECUTOR_CLASSES[self.kind]
        return f"{name} with {self.celery_workers} worker(s)" if self.is_celery else name


def celery_settings(config: AirflowConfig, broker: str) -> dict[str, str]:
    """The ``AIRFLOW__*`` variables that make ``config``'s Airflow a CeleryExecutor one:
    :data:`CELERY_SETTINGS`, the executor, the ``broker`` URL and the result backend on
    the metadata database (both contain passwords: never log them)."""
    return {
        **CELERY_SETTINGS,
        "AIRFLOW__CORE__EXECUTOR": EXECUTOR_CLASSES[CELERY],
        BROKER_URL_ENV: broker,
        "AIRFLOW__CELERY__RESULT_BACKEND": "db+" + config.metadata_url(),
    }
