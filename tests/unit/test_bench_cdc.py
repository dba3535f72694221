"""The benchmark's cdc section, pure parts: the variants rotate per round, the warm-up round
runs first and is not counted, the median of each variant's counted rounds counts, and a run
that dead-letters fails the section."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.cdc_throughput import MAPPINGS, measure, rotation
from benchmarks.dataset import Dataset

PLAIN = Dataset("bench-avro", (5, 5), 2000)
CDC = Dataset("bench-cdc", (5, 5), 2600)


def test_each_round_rotates_the_variants_by_one() -> None:
    assert rotation(3) == [
        ["plain", "cdc", "cdc_lsn"],
        ["cdc", "cdc_lsn", "plain"],
        ["cdc_lsn", "plain", "cdc"],
    ]


def test_the_warmup_round_runs_first_and_only_the_counted_rounds_make_the_median() -> None:
    calls: list[tuple[str, str]] = []
    warmup_rates, counted_rates = [1.0, 2.0, 3.0], [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0]
    rates = iter(warmup_rates + counted_rates)

    def step(dataset: Dataset, mapping: dict[str, str], label: str) -> dict[str, Any]:
        calls.append((dataset.topic, label))
        return {"records_per_s": next(rates), "mapping": mapping}

    measured = measure(PLAIN, CDC, step, rounds=3, warmup_rounds=1)
    assert calls[:3] == [
        ("bench-avro", "cdc_section_plain"),
        ("bench-cdc", "cdc_section_cdc"),
        ("bench-cdc", "cdc_section_cdc_lsn"),
    ]
    assert len(calls) == 12
    assert {n: [r["records_per_s"] for r in rs] for n, rs in measured["warmup"].items()} == {
        "plain": [1.0],
        "cdc": [2.0],
        "cdc_lsn": [3.0],
    }
    # counted rounds: 2nd rotation cdc, cdc_lsn, plain; 3rd cdc_lsn, plain, cdc; 4th plain, cdc, cdc_lsn
    assert {n: [r["records_per_s"] for r in rs] for n, rs in measured["rounds"].items()} == {
        "plain": [30.0, 50.0, 70.0],
        "cdc": [10.0, 60.0, 80.0],
        "cdc_lsn": [20.0, 40.0, 90.0],
    }
    assert {n: r["records_per_s"] for n, r in measured["runs"].items()} == {
        "plain": 50.0,
        "cdc": 60.0,
        "cdc_lsn": 40.0,
    }
    assert measured["runs"]["cdc"]["mapping"] == MAPPINGS["cdc"]


def test_a_run_that_dead_letters_fails_the_section() -> None:
    def step(dataset: Dataset, mapping: dict[str, str], label: str) -> dict[str, Any]:
        return {"records_per_s": 1.0, "bad_records": 1 if label.endswith("_cdc") else 0}

    with pytest.raises(RuntimeError, match="cdc run on bench-cdc: 1 bad records"):
        measure(PLAIN, CDC, step)


def test_datasets_of_different_sizes_are_refused() -> None:
    with pytest.raises(RuntimeError, match="datasets differ"):
        measure(PLAIN, Dataset("bench-cdc", (5, 4), 2600), lambda *_: {})
