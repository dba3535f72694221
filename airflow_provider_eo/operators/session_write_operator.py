"""SessionWriteEpochOperator: the stream DAG's write task of a ``spark.mode: session`` pipeline.

It writes the reserved epoch as one job on the Spark Connect server of
``spark.connect_conn_id`` (:mod:`.session_write`), as ``WriteEpochOperator`` does in session
mode, but it is not a ``SparkSubmitOperator``: a task that parses a session pipeline's DAG
never imports the Spark provider's ``spark_submit`` module (and the OpenLineage listener it
pulls in), which is most of a task process's start (docs/performance.md). Settings, XCom
(none), the "Epoch" link, ``on_kill`` and lineage are :class:`.EpochWriteOperator`'s.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_eo.operators.epoch_write import EpochWriteOperator


class SessionWriteEpochOperator(EpochWriteOperator):
    """Write and vote one reserved epoch on the pipeline's Spark Connect server.

    Parameters: :class:`.EpochWriteOperator`'s; ``spec.spark.mode`` must be ``session``
    (``ValueError`` otherwise: a submit-mode pipeline's write is ``WriteEpochOperator``).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self.spec.spark.mode != "session":
            raise ValueError(
                f"pipeline {self.pipeline}: SessionWriteEpochOperator writes spark.mode session "
                f"pipelines only (spark.mode is {self.spec.spark.mode!r}: use WriteEpochOperator)"
            )

    def execute(self, context: Any) -> None:
        """Write the epoch (:meth:`.EpochWriteOperator.write_epoch_on_session`). Raises
        ``ConfigError`` when no epoch was given or a connection is missing,
        ``ConnectServerUnreachable`` when the server does not accept connections (nothing
        written), ``SessionWriteFailed`` unless the epoch ends voted under this task's token."""
        self.write_epoch_on_session(context)
