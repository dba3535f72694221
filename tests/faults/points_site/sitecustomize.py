"""Arms the fault suite's protocol points in every Python process started with this folder
on ``PYTHONPATH`` and ``EO_FAULT_POINTS`` set (``tests/faults/crash_points.py``,
``crash_env``): the operators' processes, spark-submit's driver, Spark's Python workers and
Airflow's task processes. Python imports ``sitecustomize`` at start-up; nothing else does."""

import os

if os.environ.get("EO_FAULT_POINTS"):
    from tests.faults.crash_points import install

    install()
