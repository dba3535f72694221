"""The demo's last step: ``eo-ledger audit`` over every committed epoch of a pipeline.

:func:`audit_pipeline` runs the audit the way a user does (the ``eo-ledger`` command, the
ledger, Kafka, HBase and registry connections from the ``AIRFLOW_CONN_*`` variables, never
a secret in argv) over all of the pipeline's committed epochs: the demo's backfill replays
offsets a stream epoch wrote, and an audit must see every epoch over the same offsets
(docs/audit.md). It answers the report's summary; a refusal or an unreadable answer is
a ``failure`` (the audit's stderr, shortened), never an exception.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.states import EpochState

#: Seconds the audit of one demo pipeline may take.
AUDIT_TIMEOUT_S = 600


def committed_epochs(ledger: Ledger, pipeline: str) -> int:
    """How many committed epochs ``pipeline`` has."""
    return len(ledger.epochs(EpochFilter(pipeline=pipeline, states=frozenset({EpochState.COMMITTED}))))


def audit_pipeline(ledger: Ledger, pipelines_file: Path, pipeline: str) -> dict[str, Any]:
    """``eo-ledger audit --pipeline P --last <all committed>``'s summary: ``verdict``,
    ``discrepancies`` (findings counted), ``epochs``, ``offsets``, ``records_written``,
    ``dead_letters`` and ``findings_by_kind`` when there are any;
    ``{"verdict": "failed", "failure": ...}`` when the command refused or failed."""
    argv = [
        sys.executable, "-m", "airflow_provider_eo.cli.eo_ledger", "audit",
        "--pipeline", pipeline, "--pipelines-file", str(pipelines_file),
        "--last", str(max(1, committed_epochs(ledger, pipeline))),
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=AUDIT_TIMEOUT_S, check=False)
    try:
        answer = json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"verdict": "failed", "failure": f"exit {done.returncode}: {done.stderr.strip()[-2000:]}"}
    offsets = answer["offsets"]
    summary: dict[str, Any] = {
        "verdict": answer["verdict"],
        "discrepancies": answer["findings_total"],
        "epochs": answer["window"]["epochs"],
        "offsets": offsets["offsets"],
        "records_written": offsets["records_written"],
        "dead_letters": offsets["dead_letters"],
    }
    if answer["findings_total"]:
        summary["findings_by_kind"] = answer["findings_by_kind"]
    return summary
