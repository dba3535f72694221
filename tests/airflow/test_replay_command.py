"""``eo-ledger dead-letters replay --yes`` end to end: it triggers the pipeline's backfill
DAG on the session's real Airflow (``airflow_server``: REST API v2, scheduler, LocalExecutor,
spark-submit) through the ``airflow_api`` connection, and the run it started replays the
selected dead letters and resolves them.

The stream epoch runs in-process under a spec that dead-letters records over 64 bytes;
the served pipelines file declares the fix (4096).
"""

from __future__ import annotations

import contextlib
import io
import json
from urllib.parse import quote, urlsplit

import pytest
import yaml

from airflow_provider_eo.cli.eo_ledger import main
from airflow_provider_eo.dag_ids import backfill_dag_id
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState
from tests.airflow.conftest import PipelineFactory
from tests.airflow_server import AirflowServer
from tests.conftest import StackInfo
from tests.integration.dead_letter_support import dead_letter_rows
from tests.integration.epoch_round_trip import EpochRoundTrip
from tests.kafka_helpers import produce

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.integration]

BIG = json.dumps({"i": 1, "pad": "x" * 80}).encode()


def test_replay_command_triggers_the_backfill_dag_that_replays_and_resolves(
    stack: StackInfo,
    airflow_server: AirflowServer,
    pipeline_factory: PipelineFactory,
    ledger: Ledger,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pipe = pipeline_factory(partitions=1, bad_records="dead_letter", mapping={"max_record_bytes": 64})
    name, topic = pipe.spec.name, pipe.topic
    produce(stack.kafka_bootstrap, topic, [(b"k0", b'{"i": 0}'), (b"k1", BIG), (b"k2", BIG)], partition=0)
    stream = EpochRoundTrip(pipe.spec, stack.ledger_dsn, stack.conn_env).run_stream_epoch()
    assert stream is not None
    assert [row[:3] for row in dead_letter_rows(stack.ledger_dsn, name)] == [
        (1, stream.epoch_id, None),
        (2, stream.epoch_id, None),
    ]

    (declared,) = yaml.safe_load(pipe.file.read_text())["pipelines"]
    airflow_server.add_pipeline({**declared, "mapping": {"max_record_bytes": 4096}})  # the fix
    airflow_server.wait_for_dag(backfill_dag_id(name))

    url = urlsplit(airflow_server.url)
    user, password = quote(airflow_server.username, safe=""), quote(airflow_server.password, safe="")
    monkeypatch.setenv("AIRFLOW_CONN_AIRFLOW_API", f"http://{user}:{password}@{url.hostname}:{url.port}")
    out, err = io.StringIO(), io.StringIO()
    argv = [
        "--dsn", stack.ledger_dsn, "dead-letters", "replay", "--pipeline", name,
        "--topic", topic, "--partition", "0", "--from-offset", "2", "--to-offset", "3",
        "--pipelines-file", str(airflow_server.pipelines_file), "--yes",
    ]  # fmt: skip
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(argv) == 0, err.getvalue()
    answer = json.loads(out.getvalue())
    run_id = answer.pop("dag_run_id")
    assert answer == {
        "pipeline": name,
        "filter": {"topic": topic, "partition": 0, "from_offset": 2, "to_offset": 3},
        "records": 1,
        "already_resolved": 0,
        "chunks": [[{"topic": topic, "partition": 0, "start": 2, "end": 3, "selected": 1}]],
        "partitions": [{"topic": topic, "partition": 0, "count": 1, "offsets": [2], "more": 0}],
        "dry_run": False,
        "dag_id": backfill_dag_id(name),
        "conf": {"replay_dead_letters": {"topic": topic, "partition": 0, "from_offset": 2, "to_offset": 3}},
    }
    assert airflow_server.wait_for_run(backfill_dag_id(name), run_id, timeout=600) == "success"

    (replay,) = ledger.epochs(EpochFilter(pipeline=name, kind=EpochKind.BACKFILL))
    assert (replay.state, replay.run_id) == (EpochState.COMMITTED, run_id)
    assert [(r.start, r.end) for r in replay.ranges] == [(2, 3)]
    assert [row[:3] for row in dead_letter_rows(stack.ledger_dsn, name)] == [
        (1, stream.epoch_id, None),
        (2, stream.epoch_id, replay.epoch_id),
    ]
    run = airflow_server.api("GET", f"dags/{backfill_dag_id(name)}/dagRuns/{run_id}")
    assert run["conf"] == answer["conf"]
    assert run["note"].startswith("eo-ledger dead-letters replay by ")
