"""The benchmark's spark_native section, pure parts: the three runs alternate and the median
of each counts; the ratios and their targets; the peers app's command line and offsets; the
cells comparison names the first differing row; Spark's processes are told apart by kind."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.cpu_components import per_record_us, spark_process_kind
from benchmarks.dataset import Dataset
from benchmarks.spark_native import alternation, measure, summarize
from benchmarks.spark_native_app import offsets_json, parse_args
from benchmarks.spark_native_peers import first_difference
from benchmarks.targets import check_targets

DATA = Dataset("bench-native", (6, 4), 5000)


def test_each_run_takes_each_place_in_turn() -> None:
    assert alternation(3) == [
        ("write_step", "batch", "available_now"),
        ("batch", "available_now", "write_step"),
        ("available_now", "write_step", "batch"),
    ]
    assert alternation(4)[3] == ("write_step", "batch", "available_now")


def fake_run(rate: int, tasks_rate: int) -> dict[str, Any]:
    return {
        "records_per_s": rate,
        "tasks_records_per_s": tasks_rate,
        "client_cpu_s_per_million": 30.0,
        "server_cpu_s_per_million": 20.0,
        "components_us_per_record": {"kafka": 5.0},
    }


def test_measure_alternates_and_summarize_takes_each_median() -> None:
    answers = {
        "write_step": iter([200, 240, 220]),
        "batch": iter([100, 90, 130]),
        "available_now": iter([120, 80, 110]),
    }
    calls: list[str] = []

    def run_one(name: str) -> dict[str, Any]:
        calls.append(name)
        rate = next(answers[name])
        return fake_run(rate, rate * 2)

    report = summarize(measure(run_one, rounds=3), DATA, cores=2)
    assert calls == [name for order in alternation(3) for name in order]
    assert report["rounds"] == {
        "write_step_records_per_s": [200, 240, 220],
        "batch_records_per_s": [100, 90, 130],
        "available_now_records_per_s": [120, 80, 110],
    }
    assert [report["runs"][n]["records_per_s"] for n in ("write_step", "batch", "available_now")] == [
        220,
        100,
        110,
    ]
    assert (report["ratio_vs_batch"], report["ratio_vs_available_now"]) == (2.2, 2.0)
    assert (report["tasks_ratio_vs_batch"], report["tasks_ratio_vs_available_now"]) == (2.2, 2.0)
    assert (report["records"], report["partitions"], report["megabytes"]) == (10, 2, 0.0)
    assert report["cpu"]["batch"] == {
        "client_us_per_record": 30.0,
        "server_us_per_record": 20.0,
        "cores_busy": 0.01,
        "ceiling_records_per_s": 40_000,
        "components_us_per_record": {"kafka": 5.0},
    }


@pytest.mark.parametrize(("ratio", "met"), [(2.0, True), (2.4, True), (1.99, False), (None, None)])
def test_the_four_spark_native_targets(ratio: float | None, met: bool | None) -> None:
    sizes = ("500000", "1000000")
    report: dict[str, Any] = (
        {}
        if ratio is None
        else {
            "spark_native": {
                "ratio_vs_batch": dict.fromkeys(sizes, ratio),
                "ratio_vs_available_now": dict.fromkeys(sizes, ratio),
                "sizes": {size: {"cpu": {"write_step": {}}} for size in sizes},
            }
        }
    )
    checks = [c for c in check_targets(report) if c["key"].startswith("spark_native.")]
    assert [c["key"] for c in checks] == [
        "spark_native.ratio_vs_batch.500000",
        "spark_native.ratio_vs_batch.1000000",
        "spark_native.ratio_vs_available_now.500000",
        "spark_native.ratio_vs_available_now.1000000",
    ]
    assert {(c["met"], c["bound"], c["figure"]) for c in checks} == {(met, ">= 2", ratio)}
    assert all(("profile" in c) is (met is False) for c in checks)


def test_a_quick_run_leaves_the_targets_not_measured() -> None:
    report = {"spark_native": {"ratio_vs_batch": {"20000": 3.0}, "ratio_vs_available_now": {"20000": 3.0}}}
    checks = [c for c in check_targets(report) if c["key"].startswith("spark_native.")]
    assert {c["met"] for c in checks} == {None}


APP_BASE = ["--bootstrap", "b:9092", "--topic", "t", "--hbase-host", "h", "--hbase-port", "9090"]


def test_the_peers_app_reads_every_partition_from_zero_to_its_end() -> None:
    peers = ["--peer", "batch=tb", "--peer", "available_now=ta"]
    args = parse_args([*APP_BASE, "--ends", "6,4", "--checkpoint-root", "/tmp/c", *peers])
    assert args.ends == [6, 4]
    assert args.peers == [("batch", "tb"), ("available_now", "ta")]
    assert args.batch_size == 1000
    assert json.loads(offsets_json("t", args.ends)) == {"t": {"0": 6, "1": 4}}
    assert json.loads(offsets_json("t", [0, 0])) == {"t": {"0": 0, "1": 0}}


@pytest.mark.parametrize("peer", ["stream=t", "batch=", "batch"])
def test_the_peers_app_refuses_an_unknown_peer(peer: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args([*APP_BASE, "--ends", "1", "--checkpoint-root", "/tmp/c", "--peer", peer])
    assert (
        f"--peer {peer!r}: expected KIND=TABLE, KIND one of batch, available_now" in capsys.readouterr().err
    )


def test_the_first_differing_row_is_named() -> None:
    step = {b"r1": {b"d:a": b"1"}, b"r2": {b"d:a": b"2"}, b"r3": {b"d:a": b"3"}}
    assert first_difference(step, dict(step)) is None
    assert first_difference(step, {**step, b"r2": {b"d:a": b"2", b"d:b": b"x"}}) == (
        "row b'r2': write step {b'd:a': b'2'}, peer {b'd:a': b'2', b'd:b': b'x'}"
    )
    assert first_difference(step, {b"r1": step[b"r1"], b"r3": step[b"r3"]}) == (
        "row b'r2': write step {b'd:a': b'2'}, peer None"
    )
    assert first_difference(step, {**step, b"r0": {}}) == "row b'r0': write step None, peer {}"


@pytest.mark.parametrize(
    ("cmdline", "kind"),
    [
        (["/usr/lib/jvm/java-17/bin/java", "-cp", "x", "org.apache.spark.deploy.SparkSubmit"], "spark_jvm"),
        (["java", "-Xmx128m", "-cp", "x", "org.apache.spark.launcher.Main", "SparkSubmit"], "launcher"),
        (["bash", "/venv/bin/spark-submit", "app.py"], "launcher"),
        (
            ["/venv/bin/python", "/repo/airflow_provider_eo/spark/driver/application.py", "--pipeline", "p"],
            "driver_python",
        ),
        (["/venv/bin/python3.11", "-m", "pyspark.worker"], "python_workers"),
        (["/venv/bin/python", "-m", "airflow_provider_eo.spark.pyspark_startup"], "python_workers"),
        ([], None),  # a zombie: the kind seen before stays
    ],
)
def test_spark_process_kinds(cmdline: list[str], kind: str | None) -> None:
    assert spark_process_kind(cmdline) == kind


def test_per_record_microseconds() -> None:
    assert per_record_us({"kafka": 1.5, "hbase": 0.25}, 500_000) == {"hbase": 0.5, "kafka": 3.0}
