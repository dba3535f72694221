"""The benchmark's session-mode sections, pure parts: the write step's modes alternate after an
uncounted warm-up and the median of each counts; the packing ratios of each mode; the fleet
counts only the epochs committed inside its window, its pipelines file parses, and its memory
figure sums the Spark processes apart from the task processes; the targets read the figures."""

from __future__ import annotations

from typing import Any

from airflow_provider_eo.config.loader import parse_pipelines_text
from benchmarks.cpu_components import spark_process_kind
from benchmarks.fleet_epoch import EpochSample
from benchmarks.fleet_window import in_window
from benchmarks.partition_spread import spread_ratios
from benchmarks.session_fleet import QUICK, fleet_yaml
from benchmarks.session_fleet import summarize as fleet_summary
from benchmarks.session_throughput import alternate, round_order, summarize
from benchmarks.spark_memory import is_spark_process, spawning_jvm, summed_rss
from benchmarks.targets import check_targets
from benchmarks.write_step import pipelines_yaml


def fake_run(rate: int) -> dict[str, Any]:
    return {
        "records": 1000,
        "records_per_s": rate,
        "tasks_records_per_s": 2 * rate,
        "wall_s": 1000 / rate,
        "spark_tasks_s": 0.5,
    }


def test_the_modes_alternate_after_an_uncounted_warm_up() -> None:
    calls: list[str] = []
    rates = iter(range(100, 1000, 10))

    def write(mode: str) -> dict[str, Any]:
        calls.append(mode)
        return fake_run(next(rates))

    runs = alternate(write, rounds=3)
    assert calls == ["submit", "session", "submit", "session", "session", "submit", "submit", "session"]
    assert [r["records_per_s"] for r in runs["submit"]] == [120, 150, 160]
    assert [r["records_per_s"] for r in runs["session"]] == [130, 140, 170]
    assert round_order(1) == ("session", "submit")
    report = summarize(runs, {"start_s": 21.5})
    assert report["runs"]["submit"]["records_per_s"] == 150
    assert report["runs"]["session"]["records_per_s"] == 140
    assert report["ratio"] == 0.93
    assert report["rounds"] == {"submit": [120, 150, 160], "session": [130, 140, 170]}
    assert report["server"] == {"start_s": 21.5}


def test_packing_ratios_are_each_modes_own() -> None:
    runs = {"8": {"spark_tasks_s": 2.0}, "400": {"spark_tasks_s": 2.5}, "4000": {"spark_tasks_s": 5.0}}
    assert spread_ratios(runs, "session_ratio") == {
        "session_ratio_400_vs_8": 1.25,
        "session_ratio_4000_vs_8": 2.5,
    }
    assert spread_ratios({"400": {"spark_tasks_s": 1.0}}, "ratio") == {}


def sample(ended_at: float, write_ms: float = 100.0) -> EpochSample:
    return EpochSample("p", 1, 0, 10.0, 1.0, 20.0, 2.0, {}, write_ms, ended_at)


def test_the_window_counts_the_epochs_committed_inside_it() -> None:
    samples = [sample(t) for t in (9.9, 10.0, 15.0, 70.0, 70.1)]
    assert [s.ended_at for s in in_window(samples, 10.0, 70.0)] == [10.0, 15.0, 70.0]


def test_the_fleet_pipelines_file_parses_with_its_mode_and_caps() -> None:
    text, names = fleet_yaml(["eo-sfleet-ab12cd34-000", "eo-sfleet-ab12cd34-001"], "t1", "session", 10)
    assert names == ["sfleet-session-00-ab12cd34", "sfleet-session-01-ab12cd34"]
    specs = parse_pipelines_text(text, "fleet.yaml")
    assert list(specs) == names
    spec = specs[names[1]]
    assert (spec.topics, spec.hbase_table, spec.spark.mode) == (("eo-sfleet-ab12cd34-001",), "t1", "session")
    assert spec.caps.max_records_per_partition == 10
    assert parse_pipelines_text(fleet_yaml(["x-y-z"], "t", "submit", 1)[0], "f")[
        "sfleet-submit-00-y"
    ].spark.mode == ("submit")


def test_the_fleet_ratios_and_their_targets() -> None:
    def mode(epochs_per_minute: float, rss: int) -> dict[str, Any]:
        return {
            "epochs": int(epochs_per_minute),
            "epochs_per_minute": epochs_per_minute,
            "peak_spark_rss_mb": rss,
            "write_ms": {"p50": 1, "p99": 2},
            "reserve_ms_p50": 10.0,
            "commit_ms_p50": 20.0,
        }

    report = fleet_summary({"submit": mode(20.0, 4000), "session": mode(70.0, 1500)}, QUICK)
    assert (report["epochs_ratio"], report["memory_ratio"]) == (3.5, 0.38)
    assert report["records_per_epoch"] == 80
    checks = {c["key"]: c["met"] for c in check_targets({"session_fleet": report})}
    assert checks["session_fleet.epochs_ratio"] is True
    assert checks["session_fleet.memory_ratio"] is True
    assert checks["session_write.ratio"] is None
    assert checks["partition_spread.session_ratio_400_vs_8"] is None


def test_spark_processes_are_told_from_task_processes() -> None:
    java = ["/usr/lib/jvm/bin/java", "-cp", "x", "org.apache.spark.deploy.SparkSubmit"]
    task = ["/venv/bin/python", "-c", "from multiprocessing.spawn import spawn_main"]
    worker = ["/venv/bin/python", "-m", "pyspark.daemon"]
    assert is_spark_process(java, root=True)  # the Connect server
    assert not is_spark_process(task, root=True)  # a fleet task process
    assert is_spark_process(java, root=False) and is_spark_process(worker, root=False)
    assert is_spark_process(["/bin/bash", "spark-submit"], root=False)
    assert not is_spark_process([], root=False)
    assert spark_process_kind(["/venv/bin/python", "-S", "-m", "pyspark.daemon"]) == "python_workers"
    assert spark_process_kind(["/venv/bin/python", "/x/application.py", "-m", "y"]) == "driver_python"
    assert summed_rss([(True, 5), (False, 3), (True, 7)]) == (12, 3)


def test_a_jvms_child_that_still_is_the_jvm_is_not_counted() -> None:
    """Between ``posix_spawn`` and its ``exec``, a JVM's child has the JVM's command line and
    its whole RSS."""
    java = ["/usr/lib/jvm/bin/java", "-cp", "x", "org.apache.spark.deploy.SparkSubmit"]
    daemon = ["/venv/bin/python", "-S", "-m", "pyspark.daemon"]
    assert spawning_jvm(java, list(java))
    assert not spawning_jvm(["/usr/lib/jvm/lib/jspawnhelper", "17", "3:4:5"], java)  # after its exec
    assert not spawning_jvm(daemon, java)  # the server's Python daemon
    assert not spawning_jvm(daemon, list(daemon))  # a worker forked from the daemon: a process of its own
    assert not spawning_jvm(java, ["/bin/bash", "spark-class"])  # a driver JVM started by a script
    assert not spawning_jvm(java, None) and not spawning_jvm([], [])


def test_the_write_steps_pipeline_names_its_mode_only_for_session() -> None:
    common: dict[str, Any] = {"batch_size": 1000, "batch_bytes": None, "split_size": 100, "mapping": None}
    session = pipelines_yaml("p", "t", "tab", mode="session", **common)
    assert parse_pipelines_text(session, "f")["p"].spark.mode == "session"
    submit = pipelines_yaml("p", "t", "tab", **common)
    assert "mode" not in submit
    assert parse_pipelines_text(submit, "f")["p"].spark.mode == "submit"
