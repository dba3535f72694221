"""The write task's garbage-collector settings are in force during the task and undone after it."""

from __future__ import annotations

import gc

import pytest

from airflow_provider_eo.spark.task.worker_gc import TASK_THRESHOLDS, task_gc


def test_task_gc_freezes_and_raises_thresholds_then_restores_them() -> None:
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with task_gc():
        assert gc.get_threshold() == TASK_THRESHOLDS
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_task_gc_restores_the_settings_when_the_task_raises() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError, match="task failed"), task_gc():
        raise RuntimeError("task failed")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
