"""The benchmark's avro section, pure parts: the Avro dataset carries the write dataset's
records field for field; the runs alternate and the median of each format counts; a run
that dead-letters fails the section; the ratio and its target; the benchmark pipeline's file."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest
import yaml

from benchmarks.avro_dataset import EVENT_SCHEMA, avro_event
from benchmarks.avro_throughput import alternation, measure, summarize
from benchmarks.dataset import Dataset, event, event_fields
from benchmarks.targets import check_targets
from benchmarks.write_step import pipelines_yaml

PARSED = fastavro.parse_schema(EVENT_SCHEMA)
SCHEMA_ID = 7
JSON_DATA = Dataset("bench-json", (5, 5), 3000)
AVRO_DATA = Dataset("bench-avro", (5, 5), 2100)


def wire(fields: dict[str, Any]) -> bytes:
    payload = io.BytesIO()
    fastavro.schemaless_writer(payload, PARSED, fields)
    return b"\x00" + SCHEMA_ID.to_bytes(4, "big") + payload.getvalue()


@pytest.mark.parametrize("i", [0, 1, 2, 999, 123_457, 1_000_000])
def test_the_avro_record_is_the_json_record(i: int) -> None:
    key, value = avro_event(wire)(i)
    json_key, json_value = event(i)
    assert key == json_key
    assert value[:5] == b"\x00\x00\x00\x00\x07"
    assert fastavro.schemaless_reader(io.BytesIO(value[5:]), PARSED, None) == json.loads(json_value)


def test_the_schema_has_the_dataset_fields_in_order() -> None:
    assert [f["name"] for f in EVENT_SCHEMA["fields"]] == list(event_fields(0)[1])


def test_alternation() -> None:
    assert alternation(3) == [("json", "avro"), ("avro", "json"), ("json", "avro")]


def rates(per_call: list[tuple[str, int]]) -> tuple[list[tuple[str, str | None]], Any]:
    """A run_step answering each call with the next rate; the calls it saw."""
    calls: list[tuple[str, str | None]] = []
    answers = iter(per_call)

    def step(dataset: Dataset, mapping: dict[str, str] | None, label: str) -> dict[str, Any]:
        calls.append((dataset.topic, (mapping or {}).get("value_format")))
        fmt, rate = next(answers)
        assert label == f"avro_section_{fmt}"
        return {
            "records_per_s": rate,
            "tasks_records_per_s": 2 * rate,
            "bad_records": 0,
            "cells_written": 90,
            "client_cpu_s_per_million": 10.0,
            "server_cpu_s_per_million": 10.0,
        }

    return calls, step


def test_measure_alternates_and_takes_each_median() -> None:
    calls, step = rates(
        [("json", 100), ("avro", 95), ("avro", 80), ("json", 120), ("json", 110), ("avro", 99)]
    )
    measured = measure(JSON_DATA, AVRO_DATA, step)
    assert calls == [
        ("bench-json", None),
        ("bench-avro", "avro"),
        ("bench-avro", "avro"),
        ("bench-json", None),
        ("bench-json", None),
        ("bench-avro", "avro"),
    ]
    assert measured["runs"]["json"]["records_per_s"] == 110
    assert measured["runs"]["avro"]["records_per_s"] == 95
    report = summarize(measured, JSON_DATA, AVRO_DATA, cores=2)
    assert report["rounds"] == {"json_records_per_s": [100, 120, 110], "avro_records_per_s": [95, 80, 99]}
    assert (report["ratio_vs_json"], report["tasks_ratio_vs_json"]) == (0.86, 0.86)
    assert (report["records"], report["partitions"], report["megabytes"]) == (
        10,
        2,
        {"json": 0.0, "avro": 0.0},
    )
    assert report["same_cells"] is True
    assert report["cpu"]["avro"] == {
        "client_us_per_record": 10.0,
        "server_us_per_record": 10.0,
        "cores_busy": 0.0,
        "ceiling_records_per_s": 100_000,
    }


def test_a_run_with_bad_records_fails_the_section() -> None:
    def step(dataset: Dataset, mapping: dict[str, str] | None, label: str) -> dict[str, Any]:
        return {"records_per_s": 1, "tasks_records_per_s": 1, "bad_records": 3 if mapping else 0}

    with pytest.raises(RuntimeError, match="avro run on bench-avro: 3 bad records"):
        measure(JSON_DATA, AVRO_DATA, step)


def test_datasets_of_different_sizes_are_refused() -> None:
    with pytest.raises(RuntimeError, match="datasets differ"):
        measure(JSON_DATA, Dataset("bench-avro", (5, 4), 1), rates([])[1])


@pytest.mark.parametrize(("ratio", "met"), [(0.9, True), (1.3, True), (0.89, False), (None, None)])
def test_the_avro_target(ratio: float | None, met: bool | None) -> None:
    report: dict[str, Any] = {} if ratio is None else {"avro": {"ratio_vs_json": ratio, "cpu": {"json": {}}}}
    (check,) = [c for c in check_targets(report) if c["key"] == "avro.ratio_vs_json"]
    assert (check["met"], check["bound"]) == (met, ">= 0.9")
    assert ("profile" in check) is (met is False)


def test_the_benchmark_pipeline_file_carries_the_mapping() -> None:
    text = pipelines_yaml(
        "p", "t", "tb", batch_size=1000, batch_bytes=None, split_size=10, mapping={"value_format": "avro"}
    )
    assert yaml.safe_load(text) == {
        "pipelines": [
            {
                "name": "p",
                "topics": ["t"],
                "hbase": {"table": "tb"},
                "batch_size": 1000,
                "mapping": {"value_format": "avro"},
                "spark": {"split_size": 10},
            }
        ]
    }
