"""``python -m benchmarks [--quick] [--only SECTION,...]``: the benchmark suite on the local stack.

Sections (each a ratio or a figure measured against a baseline in this run):

* ``write``: 1M JSON records (``--quick``: 100k) over 8 partitions; the write step
  (spark-submit, local[2]) vs the hand-written loop, the read-only and write-only bounds;
* ``memory``: the write step's peak RSS at 10 x the ``write`` size vs at that size;
* ``audit``: the audit DAG's Spark job (spark-submit of the audit application, ``local[2]``)
  over the write step's epoch on the ``write`` size vs that write step: records/s (target
  >= 0.8x) and peak RSS (target <= 1.2x); beside it ``eo-ledger audit`` in one process;
* ``avro``: the write step on the ``write`` records in Avro (Schema Registry, Confluent wire
  format) vs the same records in JSON, alternated in the same run, median of 3 each;
* ``cdc``: the same records as Debezium change events in Avro (``envelope: debezium``, with
  offset versions and with ``version: field:source.lsn``) vs plain Avro, in turn, median of 3;
* ``reserve_commit``: reserve + commit at 100, 1,000 and 10,000 partitions, and after
  100,000 epochs of history (``--quick``: fewer);
* ``many_pipelines``: 100 pipelines of 64 partitions each reserving and committing at once
  from 8 processes on one ledger: epochs/s, p50/p99 reserve + commit, lock waits, retries;
* ``epoch_overhead``: one 1-record epoch under a real Airflow scheduler, broken down;
* ``demo``: the README's main command, ``python -m eo_devtools.demo`` with its defaults, on a
  fresh state directory (its own stack and Airflow), then again on the running stack;
* ``freshness``: a ``@continuous`` pipeline under a steady 1,000 records/s for 5 minutes
  (``--quick``: 100/s for 1 minute), in submit then session mode, under a real Airflow, and
  Spark Structured Streaming (1 s trigger) on the same records: p50 and p99 from a record's
  produce timestamp to its epoch's (micro-batch's) commit (target, session mode: <= 5 s and
  <= 10 s), the ratios (``--freshness-window-s``: another measured length);
* ``scaling``: the write step's records/s against Spark tasks per core (``local[1]`` to
  ``local[4]``, 1 or 2 tasks per partition), and the CPU per record of each component
  (Spark's JVM and Python, Kafka, HBase, Thrift, PostgreSQL);
* ``spark_native``: the write step against Spark's own Kafka source (a bounded
  ``spark.read`` and ``readStream`` with ``Trigger.AvailableNow``, both writing the same
  cells with happybase from ``foreachPartition``), alternated, at 500k and 1M records;
* ``partition_spread``: 20,000 records of 100 bytes over 8, 400 and 4,000 partitions: the
  Spark tasks' time, the Spark task count and the whole run of each, in submit and in
  session mode (target in each: 400 partitions <= 1.3x the Spark time of 8);
* ``session_write``: the write step in session mode (a job on the stack's Spark Connect
  server) vs submit mode on the ``write`` dataset, alternated, median of 3 each (target
  >= 0.95x); the server's one-time start reported beside;
* ``session_fleet``: 20 pipelines of 8 partitions (``--quick``: 4) running epochs at once
  for a fixed window, through one Connect server vs each epoch through its own spark-submit:
  epochs per minute (target >= 3x) and the peak summed RSS of all Spark processes (<= 0.5x).

The session sections start the stack's Spark Connect server (``local[2]`` as the write step's
spark-submit, a 512 MB heap sized for many small jobs) when it does not run, and stop it afterwards.

Uses the local stack in ``--state-dir`` (default ``$EO_STACK_STATE_DIR`` or
``.eo-state``), started for the run (``epoch_overhead`` starts an Airflow of its own on it) and
stopped afterwards when it was not running. Prints a table and writes the JSON report
to ``benchmarks/results/latest.json``. Runs under the repository's ``.venv`` even when
it is not activated.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _reexec_in_venv() -> None:
    """Run again with the repository's virtualenv interpreter when this one lacks the stack."""
    venv_python = REPO / ".venv" / "bin" / "python"
    try:
        import pyspark  # noqa: F401

        import eo_devtools.stack  # noqa: F401
    except ImportError:
        if venv_python.exists() and Path(sys.executable) != venv_python:
            os.execv(str(venv_python), [str(venv_python), "-m", "benchmarks", *sys.argv[1:]])
        raise SystemExit(
            f"benchmarks: run `bash scripts/setup.sh` first ({venv_python} is missing)"
        ) from None


if __name__ == "__main__":
    _reexec_in_venv()
    from benchmarks.suite import main

    sys.exit(main())
