"""What an Airflow worker imports once, so that every task process it forks starts with it.

Airflow runs each task in a process forked from its worker (the LocalExecutor's worker
processes; ``supervise`` forks the task), and that process imports the task's code again
unless its parent already holds it. Airflow 3.3's own setting preloads modules in the
``forkserver`` the LocalExecutor forks its workers from::

    [scheduler]
    mp_start_method = forkserver
    mp_forkserver_preload = airflow_provider_eo.dags.worker_preload

Importing this module loads the task runner, the DAG factory, every operator of the
provider's DAGs (the submit-mode write's ``spark_submit`` module and its OpenLineage
listener among them) and, when pyspark is installed, the Spark Connect client a session-mode
write runs (``pyspark.sql.connect``, with pandas and pyarrow). Nothing connects anywhere and
nothing reads a pipeline file. Measured under the scheduler it took 1.0 s off a session
write but made every task's start slower than with the default ``fork``, so it is not
recommended yet (docs/performance.md, "Task start"). A provider upgrade needs the scheduler
restarted, as any module Airflow preloads does.
"""

from __future__ import annotations

import contextlib

import airflow.sdk.execution_time.task_runner  # noqa: F401  the task process's entry point

import airflow_provider_eo.dags.factory
import airflow_provider_eo.operators.audit
import airflow_provider_eo.operators.audit_submit
import airflow_provider_eo.operators.backfill_chunks
import airflow_provider_eo.operators.commit
import airflow_provider_eo.operators.recover
import airflow_provider_eo.operators.release
import airflow_provider_eo.operators.reserve
import airflow_provider_eo.operators.session_write_operator
import airflow_provider_eo.operators.wait
import airflow_provider_eo.operators.write

with contextlib.suppress(ImportError):  # only a session-mode write needs the Connect client
    import pyspark.sql.connect.session  # noqa: F401

    import airflow_provider_eo.spark.session.session_write  # noqa: F401
