"""``eo-ledger prune``: a guarded dry run by default; deletes exactly the settled epochs the
policy selects (and their ranges, history and commit lag samples, the wait lag samples
the same criteria select, and the kept audits none of whose epochs is left, with their
findings) and nothing else: open epochs, cursors, pins, gaps, dead letters
and the epochs these name stay, so the next reservation starts where it would have."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg2
import pytest

from airflow_provider_eo.cli.eo_ledger import main
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import DeadLetter, Ledger, PartitionRange
from airflow_provider_eo.ledger.model.lag import LagSample, SampledPartition
from airflow_provider_eo.ledger.model.retention_policy import PrunePolicy
from eo_devtools.ledger_direct import reserve_backfill_epoch, reserve_stream_epoch
from tests.conftest import StackInfo
from tests.integration.ledger_support import fresh_database, make_spec, ranges_of, run_epoch
from tests.kafka_helpers import delete_records_before, produce

pytestmark = pytest.mark.integration


@pytest.fixture
def ledger_dsn(stack: StackInfo, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh database per test (``--all-pipelines`` sees only this test's pipelines)."""
    with fresh_database(stack.ledger_dsn) as dsn:
        monkeypatch.setenv("EO_LEDGER_DSN", dsn)
        yield dsn


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    """Run ``eo-ledger argv``; return (exit code, parsed JSON of stdout or stderr)."""
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out if code == 0 else err)


@dataclass
class History:
    """One pipeline's epochs: ids by role, settle times pushed 10 days back for e1..e5; its
    lag samples by role: commit samples of e1 and e6, a wait sample taken 10 days ago and
    one taken now; its kept audits by the epochs they name: ``e1+e2`` (2 findings), ``e2``
    (clean), ``e1+e4`` (1 finding), ``e2+e6`` (clean)."""

    name: str
    topic: str
    ids: dict[str, int]
    samples: dict[str, int]
    audits: dict[str, int]


def keep_audit(ledger: Ledger, pipeline: str, epoch_ids: list[int], findings: int) -> int:
    """An audit of ``epoch_ids`` with ``findings`` kept findings, as the CLI stores it."""
    report = {
        "pipeline": pipeline,
        "epoch_ids": epoch_ids,
        "verdict": "discrepancies" if findings else "clean",
        "findings_total": findings,
        "findings": [
            {"kind": "cell_missing", "epoch_id": epoch_ids[0], "offset": i} for i in range(findings)
        ],
    }
    return ledger.record_audit(report, run_key=None, source="cli", started_at=datetime.now(UTC))


def fill(stack: StackInfo, topic: str, partition: int, n: int) -> None:
    produce(stack.kafka_bootstrap, topic, [(f"k{i}", "v") for i in range(n)], partition=partition)


def make_history(stack: StackInfo, dsn: str, hook: EoKafkaHook, topic: str) -> History:
    """e1, e2 COMMITTED; e3 ABORTED; e4 COMMITTED and named by a gap; e5 COMMITTED and named
    by a dead letter (all five settled 10 days ago); e6 COMMITTED stream and e7 COMMITTED
    backfill (today); e8 RESERVED stream and e9 RESERVED backfill (open)."""
    spec = make_spec(topics=[topic], on_data_loss="record_gap")
    ids: dict[str, int] = {}
    with Ledger(dsn) as ledger:

        def stream(role: str, run: str) -> None:
            epoch = run_epoch(ledger, spec, hook, run)
            assert epoch is not None
            ids[role] = epoch.epoch_id

        fill(stack, topic, 0, 3)
        fill(stack, topic, 1, 2)
        stream("e1", "r1")
        fill(stack, topic, 0, 2)
        stream("e2", "r2")
        fill(stack, topic, 0, 1)
        aborted = reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id="r3")
        assert aborted is not None
        ids["e3"] = ledger.abort(aborted.epoch_id, "test").epoch_id
        fill(stack, topic, 0, 3)
        assert delete_records_before(stack.kafka_bootstrap, topic, 0, 7) == 7
        stream("e4", "r4")  # records the gap [5, 7) under its id
        fill(stack, topic, 1, 1)
        stream("e5", "r5")
        ledger.record_dead_letters(
            [DeadLetter(spec.name, topic, 1, 2, ids["e5"], "bad JSON", b"k", b"v", None)]
        )
        fill(stack, topic, 0, 1)
        stream("e6", "r6")
        backfill = reserve_backfill_epoch(
            ledger, spec, [PartitionRange(topic, 1, 0, 3)], dag_id="b", run_id="b1"
        )
        ledger.vote_written(backfill.epoch_id, backfill.fencing_token, {})
        ids["e7"] = ledger.mark_committed(backfill.epoch_id).epoch_id
        fill(stack, topic, 1, 1)
        open_stream = reserve_stream_epoch(ledger, spec, hook, dag_id="d", run_id="r8")
        assert open_stream is not None
        ids["e8"] = open_stream.epoch_id
        ids["e9"] = reserve_backfill_epoch(
            ledger, spec, [PartitionRange(topic, 1, 1, 2)], dag_id="b", run_id="b2"
        ).epoch_id
        assert [(g["start"], g["end"], g["epoch_id"]) for g in ledger.gaps(spec.name)] == [(5, 7, ids["e4"])]
        assert ledger.cursors(spec.name) == {(topic, 0): 10, (topic, 1): 3}
        lags = (SampledPartition(topic, 0, 3, 5, 2), SampledPartition(topic, 1, 2, 2, 0))
        samples = {
            "commit_e1": ledger.record_lag_sample(LagSample(spec.name, "commit", ids["e1"], lags)),
            "commit_e6": ledger.record_lag_sample(LagSample(spec.name, "commit", ids["e6"], lags)),
            "wait_old": ledger.record_lag_sample(LagSample(spec.name, "wait", None, lags)),
            "wait_new": ledger.record_lag_sample(LagSample(spec.name, "wait", None, lags)),
        }
        audits = {
            "+".join(roles): keep_audit(ledger, spec.name, [ids[role] for role in roles], findings)
            for roles, findings in ((("e1", "e2"), 2), (("e2",), 0), (("e1", "e4"), 1), (("e2", "e6"), 0))
        }
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(
            "UPDATE eo.epochs SET committed_at = committed_at - interval '10 days',"
            " aborted_at = aborted_at - interval '10 days' WHERE epoch_id = ANY(%s)",
            ([ids[role] for role in ("e1", "e2", "e3", "e4", "e5")],),
        )
        cur.execute(  # before every epoch's creation, and more than 7 days ago
            "UPDATE eo.lag_samples SET sampled_at = sampled_at - interval '10 days' WHERE sample_id = %s",
            (samples["wait_old"],),
        )
    conn.close()
    return History(spec.name, topic, ids, samples, audits)


def snapshot(dsn: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every eo table (ordered), to compare before and after."""
    tables = {
        "pipelines": "name",
        "partitions": "1, 2, 3",
        "epochs": "epoch_id",
        "epoch_ranges": "1, 2, 3",
        "gaps": "1, 2, 3, 4",
        "dead_letters": "1, 2, 3, 4",
        "epoch_transitions": "transition_id",
        "lag_samples": "sample_id",
        "lag_sample_partitions": "1, 2, 3",
        "audits": "audit_id",
        "audit_findings": "1, 2",
    }
    rows: dict[str, list[tuple[Any, ...]]] = {}
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        for table, order in tables.items():
            cur.execute(f"SELECT * FROM eo.{table} ORDER BY {order}")
            rows[table] = [
                tuple(bytes(v) if isinstance(v, memoryview) else v for v in r) for r in cur.fetchall()
            ]
    conn.close()
    return rows


def without_epochs(
    rows: dict[str, list[tuple[Any, ...]]], gone: set[int], samples_gone: set[int], audits_gone: set[int]
) -> dict[str, list[tuple[Any, ...]]]:
    """``rows`` minus the epochs ``gone``, their ranges and their history, minus the lag
    samples ``samples_gone`` with their partitions, and the audits ``audits_gone`` with
    their findings."""
    kept = dict(rows)
    kept["epochs"] = [r for r in rows["epochs"] if r[0] not in gone]
    kept["epoch_ranges"] = [r for r in rows["epoch_ranges"] if r[0] not in gone]
    kept["epoch_transitions"] = [r for r in rows["epoch_transitions"] if r[1] not in gone]
    kept["lag_samples"] = [r for r in rows["lag_samples"] if r[0] not in samples_gone]
    kept["lag_sample_partitions"] = [r for r in rows["lag_sample_partitions"] if r[0] not in samples_gone]
    kept["audits"] = [r for r in rows["audits"] if r[0] not in audits_gone]
    kept["audit_findings"] = [r for r in rows["audit_findings"] if r[0] not in audits_gone]
    return kept


def test_prune_dry_run_reports_and_deletes_nothing(
    stack: StackInfo,
    ledger_dsn: str,
    hook: EoKafkaHook,
    kafka_topic_factory: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    h = make_history(stack, ledger_dsn, hook, kafka_topic_factory(partitions=2, prefix="prune-dry"))
    before = snapshot(ledger_dsn)
    code, answer = cli(capsys, "prune", "--pipeline", h.name, "--older-than-days", "7")
    assert code == 0
    assert answer == {
        "dry_run": True,
        "policy": {"older_than_days": 7, "keep_last": None},
        "pipelines": [
            {
                "pipeline": h.name,
                "epochs": 3,
                "ranges": 6,
                "oldest_epoch_id": h.ids["e1"],
                "newest_epoch_id": h.ids["e3"],
                "kept_referenced": 2,
                "batches": 0,
                "transitions": 8,  # e1, e2: reserved, written, committed; e3: reserved, aborted
                "lag_samples": 2,  # e1's commit sample, the wait sample of 10 days ago
                "audits": 2,  # e1+e2 and e2; e1+e4 keeps e4 (its gap), e2+e6 keeps e6
                "audit_findings": 2,
            }
        ],
        "epochs": 3,
        "ranges": 6,
        "transitions": 8,
        "lag_samples": 2,
        "audits": 2,
        "audit_findings": 2,
    }
    # --keep-last alone counts every settled epoch (e1..e7): the 3 newest (e5, e6, e7) stay,
    # e4 stays for its gap; with both criteria only e1 and e2 are old AND beyond the newest 5.
    # Wait samples: taken before e5's (resp. e3's) creation, and (with both) 7 days ago.
    code, answer = cli(capsys, "prune", "--all-pipelines", "--keep-last", "3")
    assert (code, answer["epochs"], answer["pipelines"][0]["kept_referenced"], answer["lag_samples"]) == (
        0, 3, 1, 2,
    )  # fmt: skip
    assert answer["pipelines"][0]["newest_epoch_id"] == h.ids["e3"]
    assert (answer["audits"], answer["audit_findings"]) == (2, 2)
    code, answer = cli(capsys, "prune", "--pipeline", h.name, "--older-than-days", "7", "--keep-last", "5")
    assert (code, answer["epochs"], answer["ranges"], answer["transitions"], answer["lag_samples"]) == (
        0, 2, 4, 6, 2,
    )  # fmt: skip
    assert (answer["pipelines"][0]["oldest_epoch_id"], answer["pipelines"][0]["newest_epoch_id"]) == (
        h.ids["e1"], h.ids["e2"],
    )  # fmt: skip
    assert snapshot(ledger_dsn) == before


def test_prune_deletes_exactly_the_selected_epochs(
    stack: StackInfo,
    ledger_dsn: str,
    hook: EoKafkaHook,
    kafka_topic_factory: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    h = make_history(stack, ledger_dsn, hook, kafka_topic_factory(partitions=2, prefix="prune-yes"))
    make_history(stack, ledger_dsn, hook, kafka_topic_factory(partitions=2, prefix="prune-other"))
    before = snapshot(ledger_dsn)
    with Ledger(ledger_dsn) as ledger:
        cursors = ledger.cursors(h.name)
        open_ranges = ranges_of(ledger.get_epoch(h.ids["e8"]))
    code, answer = cli(
        capsys, "prune", "--pipeline", h.name, "--older-than-days", "7", "--batch-size", "2", "--yes"
    )
    assert code == 0
    assert answer["dry_run"] is False
    assert answer["pipelines"] == [
        {
            "pipeline": h.name,
            "epochs": 3,
            "ranges": 6,
            "oldest_epoch_id": h.ids["e1"],
            "newest_epoch_id": h.ids["e3"],
            "kept_referenced": 2,
            "batches": 3,  # epochs e1, e2 then e3, then the old wait sample
            "transitions": 8,
            "lag_samples": 2,
            "audits": 2,  # in the first batch: e1 and e2 gone, no epoch of theirs is left
            "audit_findings": 2,
        }
    ]
    gone = {h.ids["e1"], h.ids["e2"], h.ids["e3"]}
    assert sum(r[1] in gone for r in before["epoch_transitions"]) == 8
    # exactly the history rows and lag samples of the deleted epochs went with them, and the
    # old wait sample; the other pipeline's rows are untouched
    samples_gone = {h.samples["commit_e1"], h.samples["wait_old"]}
    audits_gone = {h.audits["e1+e2"], h.audits["e2"]}
    assert len(before["audits"]) == 8 and len(before["audit_findings"]) == 6  # both pipelines'
    assert snapshot(ledger_dsn) == without_epochs(before, gone, samples_gone, audits_gone)

    with Ledger(ledger_dsn) as ledger:
        assert ledger.cursors(h.name) == cursors == {(h.topic, 0): 10, (h.topic, 1): 3}
        assert [e.epoch_id for e in ledger.open_epochs(h.name)] == [h.ids["e8"], h.ids["e9"]]
        # the open stream epoch given up, the next reservation starts at the same cursors
        ledger.abort(h.ids["e8"], "test")
        again = reserve_stream_epoch(
            ledger, make_spec(h.name, topics=[h.topic]), hook, dag_id="d", run_id="r10"
        )
        assert ranges_of(again) == open_ranges == [(h.topic, 0, 10, 10), (h.topic, 1, 3, 4)]
    code, answer = cli(capsys, "prune", "--pipeline", h.name, "--older-than-days", "7", "--yes")
    assert (code, answer["epochs"], answer["pipelines"][0]["batches"]) == (0, 0, 0)


def test_prune_refuses_without_a_selector_or_a_criterion(
    ledger_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    selector = "prune needs exactly one of --pipeline P (repeatable) or --all-pipelines"
    assert cli(capsys, "prune", "--older-than-days", "7", "--yes") == (
        2,
        {"error": selector, "type": "Refused"},
    )
    assert cli(capsys, "prune", "--pipeline", "p", "--all-pipelines", "--keep-last", "1") == (
        2, {"error": selector, "type": "Refused"},
    )  # fmt: skip
    assert cli(capsys, "prune", "--all-pipelines", "--yes") == (
        2, {"error": "prune needs --older-than-days N or --keep-last N (or both)", "type": "Refused"},
    )  # fmt: skip
    assert cli(capsys, "prune", "--pipeline", "nope", "--keep-last", "1") == (
        1, {"error": "unknown pipeline(s): nope", "type": "LookupError"},
    )  # fmt: skip
    with pytest.raises(ValueError, match="--keep-last must be >= 1, not 0"):
        PrunePolicy(keep_last=0)
