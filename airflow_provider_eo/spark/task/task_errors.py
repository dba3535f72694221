"""A write task's expected failure, carried from the executor to the driver as data.

Executor side: a task that raises an :class:`~airflow_provider_eo.errors.EoError`
re-raises it as :class:`ExecutorTaskError`, whose message is a single marker line
``EO_TASK_ERROR <json>`` (:class:`TaskErrorData`: the error's class name and message,
pipeline, epoch and task range). The task still fails, so Spark aborts the job as it
would for any task failure; nothing is turned into a successful result.

Driver side: Spark hands back the executor's traceback as text; :meth:`TaskErrorData.find`
decodes the last marker line in it. The JSON is ASCII on one line (``json.dumps``
escapes newlines), so the marker line survives Spark's wrapping intact.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from airflow_provider_eo.errors import EoError, TaskError
from airflow_provider_eo.spark.records import TaskRange

MARKER = "EO_TASK_ERROR"


@dataclass(frozen=True)
class TaskErrorData:
    """What failed in which task: ``type`` is the error's class name (``RangeReadError``)."""

    type: str
    message: str
    pipeline: str
    epoch_id: int
    topic: str
    partition: int
    start: int
    end: int

    @classmethod
    def of(cls, error: EoError, pipeline: str, epoch_id: int, rng: TaskRange) -> TaskErrorData:
        """The data of ``error`` raised by the task writing ``rng`` of ``epoch_id``."""
        return cls(
            type(error).__name__, str(error), pipeline, epoch_id, rng.topic, rng.partition, rng.start, rng.end
        )

    def marker_line(self) -> str:
        """``EO_TASK_ERROR {"type": ..., ...}`` on one line."""
        return f"{MARKER} {json.dumps(asdict(self), sort_keys=True)}"

    @classmethod
    def find(cls, text: str) -> TaskErrorData | None:
        """The data of the last well-formed marker line in ``text`` (None when there is none)."""
        for line in reversed(text.splitlines()):
            _, marker, payload = line.partition(f"{MARKER} ")
            if marker:
                decoded = _decode(payload)
                if decoded is not None:
                    return decoded
        return None

    def __str__(self) -> str:
        return f"{self.type}: {self.message}"


def _decode(payload: str) -> TaskErrorData | None:
    try:
        fields: Any = json.loads(payload)
        return TaskErrorData(**fields)
    except (ValueError, TypeError):
        return None


class ExecutorTaskError(TaskError):
    """Raised on the executor for an ``EoError`` of a task; the message is the marker line."""

    def __init__(self, data: TaskErrorData) -> None:
        self.data = data
        super().__init__(data.marker_line())

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.data,))
