"""``eo-ledger audit`` on the real stack: committed epochs (updates, a tombstone, a bad
record dead-lettered), a clean audit with exact counts, then the faults a real incident
leaves (a cell's bytes changed at its version, a cell deleted, a row deleted, a cell put
at a version no record has, a dead-letter row deleted, the group moved back, a vote whose
counts do not add up): the audit names exactly each of them and nothing else. Bad input
exits 2 and reads nothing. Ranges retention deleted are not auditable (never a failure);
a table or topic that is gone is one ``range_unreadable`` finding per range; replay epochs are
audited over their selected offsets; under field versions, cells newer than the window
are later data, never unexpected; a backfill after a major compaction that brings a
deleted cell back is the one delete not applied.

Records (``batch_size`` 2, epochs of at most 4 offsets), the versions the writer gives:
epoch 1 [0,4): u1, u2 at 1; u3 at 2 (the bad record 3 closes its segment);
epoch 2 [4,8): u1's age and u2's family delete at 5; u5, u3 at 7; epoch 3 [8,10): u6, u7 at 9.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import happybase
import psycopg2
import pytest
from confluent_kafka.admin import AdminClient

from airflow_provider_eo.cli.eo_ledger import main
from airflow_provider_eo.ledger import PartitionRange
from eo_devtools.stack.hbase_admin import HBaseTableTool
from tests.conftest import StackInfo
from tests.integration.dead_letter_support import World, dead_letter_world
from tests.integration.epoch_round_trip import (
    EpochRoundTrip,
    kafka_connection,
    ledger_connection,
    pipeline_spec,
)
from tests.integration.ledger_support import fresh_database
from tests.integration.test_replay_dead_letters import RECORDS as REPLAYED
from tests.integration.test_replay_dead_letters import replay_in_process, replay_world, timed_scan
from tests.kafka_helpers import delete_records_before, produce

pytestmark = pytest.mark.integration

RECORDS: list[tuple[str, bytes | None]] = [
    ("u1", b'{"name":"ann","age":30}'),  # 0
    ("u2", b'{"name":"bob"}'),  # 1
    ("u3", b'{"name":"cy"}'),  # 2
    ("u4", b"not json"),  # 3: a dead letter
    ("u1", b'{"age":31}'),  # 4
    ("u2", None),  # 5: tombstone
    ("u5", b'{"name":"eve"}'),  # 6
    ("u3", b'{"name":"cy2"}'),  # 7
    ("u6", b'{"name":"fay"}'),  # 8
    ("u7", b'{"name":"gus"}'),  # 9
]


OPTIONS: dict[str, Any] = {"batch_size": 2, "caps": {"max_records_per_partition": 4}}


@pytest.fixture(scope="module")
def world(stack: StackInfo) -> Iterator[World]:
    with (
        fresh_database(stack.ledger_dsn) as dsn,
        dead_letter_world(stack, dsn, **OPTIONS) as found,
    ):
        produce(stack.kafka_bootstrap, found.source, RECORDS, partition=0)
        assert [found.trip.run_stream_epoch() is None for _ in range(4)] == [False, False, False, True]
        yield found


def pipelines_yaml(world: World, folder: Path, options: dict[str, Any] = OPTIONS) -> Path:
    """The pipelines YAML declaring the world's pipeline exactly as its epochs were written."""
    entry = {
        "name": world.spec.name, "topics": [world.source], "hbase": {"table": world.spec.hbase_table},
        "bad_records": "dead_letter", "dead_letters": {"topic": world.dlq}, **options,
    }  # fmt: skip
    file = folder / "pipelines.yaml"
    file.write_text(json.dumps({"pipelines": [entry]}))
    return file


@pytest.fixture(scope="module")
def pipelines_file(world: World, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pipelines_yaml(world, tmp_path_factory.mktemp("audit"))


def audit(
    world: World, pipelines_file: Path, *args: str, capsys: pytest.CaptureFixture[str]
) -> tuple[int, Any]:
    """``eo-ledger audit`` in this process: exit status and its JSON answer (stderr's on a refusal)."""
    capsys.readouterr()
    with world.trip.connections():
        code = main(["--dsn", world.ledger_dsn, "audit", "--pipelines-file", str(pipelines_file), *args])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else json.loads(err.strip().splitlines()[-1])


def epoch_ids(world: World) -> list[int]:
    with psycopg2.connect(world.ledger_dsn) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT epoch_id FROM eo.epochs WHERE pipeline = %s ORDER BY epoch_id", (world.spec.name,)
        )
        return [row[0] for row in cur.fetchall()]


def kept_audits(world: World) -> list[tuple[Any, ...]]:
    """The pipeline's rows of ``eo.audits`` (id, run, source, epochs, window, verdict, total)
    with their ``eo.audit_findings`` as (seq, epoch id, kind), oldest first, read directly."""
    with psycopg2.connect(world.ledger_dsn) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT a.audit_id, a.run_key, a.source, a.epoch_ids, a.first_epoch, a.last_epoch, a.verdict,"
            " a.findings_total, coalesce(array_agg(ARRAY[f.seq, f.epoch_id]::bigint[] ORDER BY f.seq)"
            " FILTER (WHERE f.seq IS NOT NULL), '{}'), array_remove(array_agg(f.kind ORDER BY f.seq), NULL)"
            " FROM eo.audits a LEFT JOIN eo.audit_findings f USING (audit_id)"
            " WHERE a.pipeline = %s GROUP BY a.audit_id ORDER BY a.audit_id",
            (world.spec.name,),
        )
        return [tuple(row) for row in cur.fetchall()]


def findings(answer: dict[str, Any]) -> set[tuple[Any, ...]]:
    return {
        (f["kind"], f["offset"], f["row"], f["column"], f["expected_version"], f["hbase_holds"])
        for f in answer["findings"]
    }


def test_clean_window_then_every_fault_named(
    world: World, pipelines_file: Path, stack: StackInfo, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second, third = epoch_ids(world)
    before = timed_scan(stack, world.spec.hbase_table)
    code, answer = audit(world, pipelines_file, "--pipeline", world.spec.name, capsys=capsys)
    # the audit only reads: HBase, the group and the ledger's epochs are as they were
    assert timed_scan(stack, world.spec.hbase_table) == before
    assert world.trip.group_offsets() == {0: 10}
    assert epoch_ids(world) == [first, second, third]
    assert answer["findings"] == [], json.dumps(answer["findings"], indent=1)
    assert (code, answer["verdict"], answer["window"]) == (
        0, "clean", {"first_epoch": first, "last_epoch": third, "epochs": 3},
    )  # fmt: skip
    assert answer["offsets"] == {
        "ranges": 3, "offsets": 10, "records_written": 9, "dead_letters": 1, "skipped_offsets": 0,
    }  # fmt: skip
    # u2's name at 1 is covered by u2's family delete at 5; every other expected cell is at its version
    assert answer["cells"] == {"verified": 8, "covered_by_newer": 1, "deletes_verified": 1, "later_data": 0}
    # the CLI kept the audit (no run, source cli, no finding) and named it
    clean_id = answer["audit_id"]
    assert kept_audits(world) == [
        (clean_id, None, "cli", [first, second, third], first, third, "clean", 0, [], []),
    ]

    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    table = hbase.table(world.spec.hbase_table)
    table.put(b"u6", {b"d:name": b"FAY"}, timestamp=9)  # other bytes at the same version
    table.delete(b"u7", columns=[b"d:name"])  # a cell deleted
    table.delete(b"u5")  # a whole row deleted
    table.put(b"u3", {b"d:extra": b"x"}, timestamp=6)  # a version no record has
    hbase.close()
    with psycopg2.connect(world.ledger_dsn) as conn, conn.cursor() as cur:
        cur.execute('DELETE FROM eo.dead_letters WHERE pipeline = %s AND "offset" = %s', (world.spec.name, 3))
        cur.execute(
            "UPDATE eo.epochs SET metrics = jsonb_set(metrics, '{partitions,0,records}', '5')"
            " WHERE epoch_id = %s",
            (second,),
        )
    world.trip.kafka.commit_offsets(world.spec.group_id, {(world.source, 0): 8})

    code, answer = audit(world, pipelines_file, "--pipeline", world.spec.name, "--last", "3", capsys=capsys)
    assert (code, answer["verdict"]) == (1, "discrepancies")
    assert findings(answer) == {
        ("cell_bytes_differ", 8, "u6", "d:name", 9, "'FAY' at version 9"),
        ("cell_missing", 9, "u7", "d:name", 9, "nothing"),
        ("cell_missing", 6, "u5", "d:name", 7, "nothing"),
        ("unexpected_cell", None, "u3", "d:extra", None, "'x' at version 6"),
        ("dead_letter_missing", 3, None, None, None, None),
        ("vote_counts_do_not_add_up", 4, None, None, None, None),
        ("group_behind", 10, None, None, None, None),
    }
    assert answer["findings_total"] == 7
    # kept with its findings, in the order the answer lists them
    assert kept_audits(world)[1:] == [
        (answer["audit_id"], None, "cli", [first, second, third], first, third, "discrepancies", 7,
         [[seq, f["epoch_id"]] for seq, f in enumerate(answer["findings"])],
         [f["kind"] for f in answer["findings"]]),
    ]  # fmt: skip


def test_a_tiny_index_budget_audits_in_buckets_with_the_same_report(
    world: World, pipelines_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The faulty window above, audited whole and with half the index bytes it took:
    the rows are audited in buckets (the audit starts again when a pass goes over), the
    merged state stays under the budget, and the report is the same, finding for finding."""
    args = ("--pipeline", world.spec.name, "--last", "3", "--no-record")
    code, whole = audit(world, pipelines_file, *args, capsys=capsys)
    assert whole["index"]["buckets"] == whole["index"]["passes"] == 1
    budget = whole["index"]["peak_bytes"] // 2
    tiny_code, tiny = audit(world, pipelines_file, *args, "--index-budget-bytes", str(budget), capsys=capsys)
    assert tiny["index"]["budget_bytes"] == budget and 0 < tiny["index"]["peak_bytes"] <= budget
    assert tiny["index"]["buckets"] > 1 and tiny["index"]["passes"] > tiny["index"]["buckets"]
    for answer in (whole, tiny):
        del answer["index"], answer["hbase_calls"]
    assert sorted(tiny.pop("findings"), key=json.dumps) == sorted(whole.pop("findings"), key=json.dumps)
    assert (tiny_code, tiny) == (code, whole)
    assert whole["findings_total"] == 7


def test_bad_input_exits_2(
    world: World, pipelines_file: Path, stack: StackInfo, capsys: pytest.CaptureFixture[str]
) -> None:
    name = world.spec.name
    capsys.readouterr()
    with world.trip.connections():  # the text report of the faulty window (the test above)
        args = ["--dsn", world.ledger_dsn, "audit", "--pipelines-file", str(pipelines_file)]
        code = main([*args, "--pipeline", name, "--last", "3", "--format", "text"])
    text = capsys.readouterr().out
    assert (code, text.splitlines()[-8]) == (1, "verdict: discrepancies (7 findings)")
    kept = kept_audits(world)
    assert text.splitlines()[0] == f"kept as audit {kept[-1][0]}"
    assert audit(world, pipelines_file, "--pipeline", "nope", capsys=capsys)[0] == 2
    assert audit(world, pipelines_file, "--pipeline", name, "--epochs", "9000-9001", capsys=capsys)[0] == 2
    assert audit(world, pipelines_file, "--pipeline", name, "--epochs", "x", capsys=capsys)[0] == 2
    other = EpochRoundTrip(
        pipeline_spec(f"{name}_other", world.source, world.spec.hbase_table), world.ledger_dsn, world.trip.env
    )
    epoch = other.reserve()
    assert epoch is not None
    code, error = audit(
        world,
        pipelines_file,
        "--pipeline",
        name,
        "--epochs",
        f"{epoch.epoch_id}-{epoch.epoch_id}",
        capsys=capsys,
    )
    assert (code, error["type"]) == (2, "Refused")
    assert "not pipeline" in error["error"]
    assert kept_audits(world) == kept  # no refusal kept anything


def ledger_cli(world: World, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    """``eo-ledger`` (no Kafka, no HBase): exit status and its JSON answer (stderr's on a refusal)."""
    capsys.readouterr()
    code = main(["--dsn", world.ledger_dsn, *args])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else json.loads(err.strip().splitlines()[-1])


def test_kept_audits_listed_shown_and_a_window_since_a_time(
    world: World, pipelines_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = world.spec.name
    first, second, third = epoch_ids(world)
    kept = kept_audits(world)  # the clean audit, then the faulty window twice (JSON, text)
    assert [row[6] for row in kept] == ["clean", "discrepancies", "discrepancies"]

    code, listed = ledger_cli(world, "audits", "--pipeline", name, capsys=capsys)
    assert code == 0 and listed["pipeline"] == name
    assert [
        (a["audit_id"], a["verdict"], a["findings_total"], a["source"], a["first_epoch"], a["last_epoch"])
        for a in listed["audits"]
    ] == [(row[0], row[6], row[7], "cli", first, third) for row in reversed(kept)]
    assert all("findings" not in a for a in listed["audits"])
    code, newest = ledger_cli(world, "audits", "--pipeline", name, "--limit", "1", capsys=capsys)
    assert [a["audit_id"] for a in newest["audits"]] == [kept[-1][0]]

    code, shown = ledger_cli(world, "audit-show", str(kept[1][0]), capsys=capsys)
    with psycopg2.connect(world.ledger_dsn) as conn, conn.cursor() as cur:
        cur.execute("SELECT finding FROM eo.audit_findings WHERE audit_id = %s ORDER BY seq", (kept[1][0],))
        stored = [row[0] for row in cur.fetchall()]
    assert (code, shown["audit_id"], shown["verdict"], shown["findings"]) == (
        0,
        kept[1][0],
        "discrepancies",
        stored,
    )
    assert [f["kind"] for f in shown["findings"]] == kept[1][9]
    assert (shown["summary"]["findings_total"], shown["summary"]["findings_not_shown"]) == (7, 0)

    for refused in (
        ("audits", "--pipeline", "nope"),
        ("audits", "--pipeline", name, "--limit", "0"),
        ("audit-show", "999999"),
    ):
        code, error = ledger_cli(world, *refused, capsys=capsys)
        assert (code, error["type"]) == (2, "Refused"), refused

    # --since: the epochs committed at or after the second's commit (a time without a zone is UTC)
    with psycopg2.connect(world.ledger_dsn) as conn, conn.cursor() as cur:
        cur.execute("SELECT committed_at FROM eo.epochs WHERE epoch_id = %s", (second,))
        committed_at = cur.fetchone()[0]
    naive_utc = committed_at.astimezone(UTC).replace(tzinfo=None).isoformat()
    code, answer = audit(world, pipelines_file, "--pipeline", name, "--since", naive_utc, capsys=capsys)
    assert (code, answer["window"], answer["epoch_ids"]) == (
        1, {"first_epoch": second, "last_epoch": third, "epochs": 2}, [second, third],
    )  # fmt: skip
    assert kept_audits(world)[-1][:8] == (
        answer["audit_id"], None, "cli", [second, third], second, third, "discrepancies",
        answer["findings_total"],
    )  # fmt: skip
    kept = kept_audits(world)
    for since in ("yesterday", "2026-13-01T00:00:00", (committed_at + timedelta(days=365)).isoformat()):
        code, error = audit(world, pipelines_file, "--pipeline", name, "--since", since, capsys=capsys)
        assert (code, error["type"]) == (2, "Refused"), since
    assert (
        "ISO-8601"
        in audit(world, pipelines_file, "--pipeline", name, "--since", "x", capsys=capsys)[1]["error"]
    )
    with pytest.raises(SystemExit) as usage:  # --since and --last are one choice
        main(["--dsn", world.ledger_dsn, "audit", "--pipeline", name, "--since", naive_utc, "--last", "2"])
    assert usage.value.code == 2
    # --no-record: the same answer, nothing kept
    code, answer = audit(world, pipelines_file, "--pipeline", name, "--epochs", f"{first}-{first}",
                         "--no-record", capsys=capsys)  # fmt: skip
    assert (code, answer["audit_id"], answer["epoch_ids"]) == (1, None, [first])
    # offset 3's dead-letter row; u2's name at 1, whose family delete at 5 is outside this window
    assert [(f["kind"], f["offset"]) for f in answer["findings"]] == [
        ("dead_letter_missing", 3),
        ("cell_missing", 1),
    ]
    assert kept_audits(world) == kept


def test_retention_ranges_are_not_auditable_and_a_gone_table_is_reported_per_range(
    stack: StackInfo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with fresh_database(stack.ledger_dsn) as dsn, dead_letter_world(stack, dsn, **OPTIONS) as other:
        produce(stack.kafka_bootstrap, other.source, RECORDS, partition=0)
        assert [other.trip.run_stream_epoch() is None for _ in range(4)] == [False, False, False, True]
        first, second, third = epoch_ids(other)
        assert delete_records_before(stack.kafka_bootstrap, other.source, 0, 2) == 2
        file = pipelines_yaml(other, tmp_path)

        code, answer = audit(other, file, "--pipeline", other.spec.name, capsys=capsys)
        assert (code, answer["verdict"], answer["findings"]) == (0, "clean", [])
        assert answer["not_auditable"] == [
            {"epoch_id": first, "topic": other.source, "partition": 0, "start": 0, "end": 4, "records": 4,
             "low_watermark": 2, "vote": {"records": 4, "skipped_offsets": 0, "bad_records": 1}},
        ]  # fmt: skip
        assert answer["offsets"] == {
            "ranges": 2, "offsets": 6, "records_written": 6, "dead_letters": 0, "skipped_offsets": 0,
        }  # fmt: skip
        assert answer["cells"] == {
            "verified": 5,
            "covered_by_newer": 0,
            "deletes_verified": 1,
            "later_data": 0,
        }

        hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
        hbase.delete_table(other.spec.hbase_table, disable=True)
        code, answer = audit(other, file, "--pipeline", other.spec.name, capsys=capsys)
        assert code == 1
        assert [(f["kind"], f["epoch_id"], f["offset"]) for f in answer["findings"]] == [
            ("range_unreadable", second, 4), ("range_unreadable", third, 8),
        ]  # fmt: skip
        assert other.spec.hbase_table in answer["findings"][0]["detail"]
        hbase.create_table(other.spec.hbase_table, {"d": {}})  # for the world's teardown
        hbase.close()

        # the topic gone too (short Kafka timeouts): each range says so, the group is reported
        admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
        admin.delete_topics([other.source])[other.source].result(timeout=15)
        other.trip.env["AIRFLOW_CONN_EO_KAFKA"] = kafka_connection(
            stack.kafka_bootstrap, {"eo.timeout.ms": 3000}
        )
        code, answer = audit(other, file, "--pipeline", other.spec.name, capsys=capsys)
        # no low watermark either: epoch 1's range is tried and unreadable too; the group's
        # offsets went with the topic
        assert (code, [(f["kind"], f["epoch_id"], f["offset"]) for f in answer["findings"]]) == (
            1,
            [("range_unreadable", first, 0), ("range_unreadable", second, 4), ("range_unreadable", third, 8),
             ("group_behind", third, 10)],
        )  # fmt: skip
        assert f"topic {other.source!r} does not exist" in answer["findings"][0]["detail"]


def test_replay_epochs_are_audited_over_their_selection(
    stack: StackInfo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with replay_world(stack, tmp_path, REPLAYED) as built:
        params = {"topics": [], "start_offset": None, "replay_dead_letters": {"epoch": built.stream.epoch_id}}
        replays = replay_in_process(built, params)
        assert [[(r.start, r.end) for r in e.ranges] for e in replays] == [[(1, 4)], [(4, 5)]]
        capsys.readouterr()
        with pytest.MonkeyPatch.context() as patch:
            for name, value in {
                **stack.conn_env,
                "AIRFLOW_CONN_EO_LEDGER": ledger_connection(built.dsn),
            }.items():
                patch.setenv(name, value)
            window = f"{replays[0].epoch_id}-{replays[-1].epoch_id}"
            code = main(["--dsn", built.dsn, "audit", "--pipelines-file", str(built.fixed_file),
                         "--pipeline", built.name, "--epochs", window])  # fmt: skip
        answer = json.loads(capsys.readouterr().out)
        assert (code, answer["findings"]) == (0, []), json.dumps(answer["findings"], indent=1)
        # offsets 1 and 4 written, 3 still refused (its dead letter re-recorded), 2 not selected
        assert answer["offsets"] == {
            "ranges": 2, "offsets": 4, "records_written": 2, "dead_letters": 1, "skipped_offsets": 1,
        }  # fmt: skip
        assert answer["cells"]["verified"] == 4  # k1 and k4: "i" and "pad" each


FIELD_RECORDS: list[tuple[str, bytes | None]] = [
    ("u1", b'{"ts":100,"name":"a"}'),  # epoch 1
    ("u2", b'{"ts":200,"name":"b"}'),
    ("u1", b'{"ts":300,"name":"c"}'),  # epoch 2: newer
    ("u2", b'{"ts":150,"name":"old"}'),  # epoch 2: older than what u2 shows
]
FIELD_OPTIONS: dict[str, Any] = {
    "batch_size": 2, "caps": {"max_records_per_partition": 2}, "mapping": {"version": "field:ts"},
}  # fmt: skip


def test_field_versions_newer_than_the_window_are_later_data(
    stack: StackInfo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with fresh_database(stack.ledger_dsn) as dsn, dead_letter_world(stack, dsn, **FIELD_OPTIONS) as built:
        produce(stack.kafka_bootstrap, built.source, FIELD_RECORDS, partition=0)
        assert [built.trip.run_stream_epoch() is None for _ in range(3)] == [False, False, True]
        first, _second = epoch_ids(built)
        file = pipelines_yaml(built, tmp_path, FIELD_OPTIONS)

        code, answer = audit(
            built, file, "--pipeline", built.spec.name, "--epochs", f"{first}-{first}", capsys=capsys
        )
        assert (code, answer["findings"]) == (0, [])
        # u1's name and ts at 300 (epoch 2) are newer than the window: later data, not unexpected
        assert answer["cells"] == {
            "verified": 4,
            "covered_by_newer": 0,
            "deletes_verified": 0,
            "later_data": 2,
        }

        code, answer = audit(built, file, "--pipeline", built.spec.name, capsys=capsys)
        assert (code, answer["findings"]) == (0, [])
        # u2's older values at 150 are in HBase at their version, below the visible 200
        assert answer["cells"] == {
            "verified": 8,
            "covered_by_newer": 0,
            "deletes_verified": 0,
            "later_data": 0,
        }
        assert (answer["window"]["epochs"], answer["offsets"]["records_written"]) == (2, 4)


def test_a_backfill_after_a_major_compaction_brings_back_a_deleted_cell(
    stack: StackInfo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without ``KEEP_DELETED_CELLS`` a major compaction drops the tombstone's marker; the
    backfill of the older range then writes the put again, visible: the incident
    docs/spark.md warns of, named by the audit as the one delete that is not applied."""
    records: list[tuple[str, bytes | None]] = [
        ("u1", b'{"name":"ann"}'),
        ("u1", None),
        ("u2", b'{"name":"bo"}'),
    ]
    with fresh_database(stack.ledger_dsn) as dsn, dead_letter_world(stack, dsn, **OPTIONS) as built:
        produce(stack.kafka_bootstrap, built.source, records, partition=0)
        assert built.trip.run_stream_epoch() is not None  # [0, 3): u1's put collapses into its delete at 1
        file = pipelines_yaml(built, tmp_path)
        assert audit(built, file, "--pipeline", built.spec.name, capsys=capsys)[0] == 0

        HBaseTableTool(stack.state_dir).major_compact(built.spec.hbase_table)
        built.trip.write_and_commit(built.trip.reserve_backfill([PartitionRange(built.source, 0, 0, 1)]))
        code, answer = audit(built, file, "--pipeline", built.spec.name, capsys=capsys)
        assert (code, findings(answer)) == (
            1,
            {("delete_not_applied", 1, "u1", "d:name", 1, "'ann' at version 0")},
        )
        assert answer["cells"]["verified"] == 2  # u2's name, and the backfill's u1 name at 0
