"""The benchmark's scaling section, pure parts: the shapes alternate and each median counts;
a partition's range is split into the shape's number of tasks; the fixed run is one record
per partition; CPU per record of each component is the reference run's beyond the fixed
run's; a merged report drops the retired 1-vs-2-worker section."""

from __future__ import annotations

from typing import Any

from benchmarks.dataset import Dataset
from benchmarks.report import merge_reports
from benchmarks.scaling import REFERENCE, SHAPES, Shape, cpu_per_component, measure, prefix, summarize

DATA = Dataset("bench-scaling", (30, 30, 29, 31), 12_000)


def test_a_prefix_keeps_every_partition_and_scales_the_bytes() -> None:
    assert prefix(DATA, 60) == Dataset("bench-scaling", (15, 15, 14, 15), 5900)
    assert prefix(DATA, 4).ends == (1, 1, 1, 1)
    assert prefix(DATA, 1000) is DATA


def test_split_sizes_cut_the_largest_range_into_the_tasks() -> None:
    assert Shape(2, 1).split_size(DATA) == 31
    assert Shape(4, 2).split_size(DATA) == 16
    assert (Shape(4, 2).name, Shape(1, 1).name) == ("local[4] x2", "local[1] x1")


def fake_run(records: int, rate: int, components: dict[str, float]) -> dict[str, Any]:
    return {
        "records": records,
        "records_per_s": rate,
        "tasks_records_per_s": 2 * rate,
        "client_cpu_s_per_million": 50.0,
        "server_cpu_s_per_million": 30.0,
        "components_us_per_record": components,
    }


def test_measure_alternates_the_shapes_then_runs_the_fixed_cost_once() -> None:
    calls: list[tuple[str, int]] = []
    rates = iter(range(100, 1000, 10))

    def run_shape(shape: Shape, dataset: Dataset) -> dict[str, Any]:
        calls.append((shape.name, dataset.records))
        return fake_run(dataset.records, next(rates), {"kafka": 10.0})

    measured = measure(DATA, run_shape, rounds=2)
    names = [shape.name for shape in SHAPES]
    assert calls == [(n, 120) for n in names] + [(n, 120) for n in names[1:] + names[:1]] + [
        (REFERENCE.name, 4)
    ]
    assert [r["records_per_s"] for r in measured["rounds"][SHAPES[0]]] == [100, 190]
    assert measured["runs"][SHAPES[0]]["records_per_s"] == 190  # the upper median of two
    report = summarize(measured, DATA, cores=2)
    assert report["records_per_s_by_tasks_per_core"] == {"0.5": 190, "1": 150, "2": 160}
    assert report["shapes"]["local[4] x2"] == {
        "tasks_per_core": 2.0,
        "tasks": 8,
        "records_per_s": 180,
        "tasks_records_per_s": 360,
        "rounds_records_per_s": [140, 180],
        "cores_busy": 0.01,
    }
    assert report["reference"] == "local[2] x1"


def test_cpu_per_record_is_the_reference_beyond_the_fixed_run() -> None:
    # reference: 100,000 records; kafka 2.0 s, spark_jvm 12.0 s, python_workers 3.0 s
    reference = fake_run(100_000, 1, {"kafka": 20.0, "spark_jvm": 120.0, "python_workers": 30.0})
    # fixed: 8 records; kafka 0.2 s, spark_jvm 10.0 s, python_workers 3.2 s (noise: more than the reference)
    fixed = fake_run(8, 1, {"kafka": 25_000.0, "spark_jvm": 1_250_000.0, "python_workers": 400_000.0})
    assert cpu_per_component(reference, fixed) == {
        "per_record_us": {"kafka": 18.0, "python_workers": 0.0, "spark_jvm": 20.0},
        "per_record_us_total": 38.0,
        "fixed_s_per_run": {"kafka": 0.2, "python_workers": 3.2, "spark_jvm": 10.0},
    }


def test_a_merge_drops_the_retired_standalone_section() -> None:
    previous = {
        "sections": ["write", "standalone"],
        "finished_at": "t0",
        "write": {"x": 1},
        "standalone": {"1": 9701, "2": 9193},
    }
    fresh = {"sections": ["scaling"], "finished_at": "t1", "scaling": {"y": 2}}
    assert merge_reports(previous, fresh) == {
        "sections": ["write", "scaling"],
        "finished_at": "t1",
        "write": {"x": 1},
        "scaling": {"y": 2},
        "section_runs": {"write": "t0", "scaling": "t1"},
    }
