"""The YARN containers a write submission asks for, sized as Spark 4's YARN client sizes them.

YARN refuses an application whose container request exceeds the queue's maximum
allocation (``yarn.scheduler.maximum-allocation-mb`` / ``-vcores``, or the queue's own);
Spark's client checks the same before it submits. The write step checks it earlier, before
spark-submit, from the same rules (:func:`driver_container`, :func:`executor_container`):

* the driver, in cluster deploy mode the ApplicationMaster's container:
  ``spark.driver.memory`` + overhead, where the overhead is ``spark.driver.memoryOverhead``,
  else the larger of ``spark.driver.memoryOverheadFactor`` (0.10) x memory and
  ``spark.driver.minMemoryOverhead`` (384 MiB); ``spark.driver.cores`` vcores (1). In client
  deploy mode the AM only launches executors: ``spark.yarn.am.memory`` (512 MiB) +
  ``spark.yarn.am.memoryOverhead`` or the same max(0.10 x, 384), ``spark.yarn.am.cores``;
* each executor: ``spark.executor.memory`` + overhead (``spark.executor.memoryOverhead``,
  else max(``spark.executor.memoryOverheadFactor`` x memory, ``spark.executor.minMemoryOverhead``))
  + ``spark.executor.pyspark.memory`` + ``spark.memory.offHeap.size`` when off-heap memory is
  enabled; ``spark.executor.cores`` vcores (1).

Sizes are Spark's: a number with an optional unit (``512m``, ``2g``; MiB without one,
bytes for ``spark.memory.offHeap.size``). The conf is what spark-submit gets (the
pipeline's ``spark.conf`` with the operator's ``--driver-memory`` / ``--executor-memory`` /
``--executor-cores`` folded in); Spark's installation defaults file is not read.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

_SIZE = re.compile(r"^\s*(\d+)\s*([kmgtpb]?)b?\s*$", re.IGNORECASE)
_UNIT_MIB = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024**2, "p": 1024**3}
MIN_OVERHEAD_MIB = 384
OVERHEAD_FACTOR = 0.10


@dataclass(frozen=True)
class Container:
    """One container request: ``role`` (``driver``, ``executor``, ``application master``),
    ``memory_mb``, ``vcores``, and ``sizing`` (how the memory adds up, for messages)."""

    role: str
    memory_mb: int
    vcores: int
    sizing: str


def size_mib(text: str, *, default_unit: str = "m") -> int:
    """A Spark size (``512m``, ``2g``, ``1024``; ``default_unit`` without a unit) in MiB,
    rounded down as Spark does. Raises ``ValueError`` for anything else."""
    match = _SIZE.match(str(text))
    if not match:
        raise ValueError(f"not a Spark memory size: {text!r}")
    number, unit = int(match.group(1)), (match.group(2) or default_unit).lower()
    if unit == "b":
        return number // (1024 * 1024)
    return int(number * _UNIT_MIB[unit])


def _overhead(conf: Mapping[str, str], prefix: str, memory: int, minimum_key: str | None) -> int:
    if f"{prefix}.memoryOverhead" in conf:
        return size_mib(conf[f"{prefix}.memoryOverhead"])
    factor = float(conf.get(f"{prefix}.memoryOverheadFactor", OVERHEAD_FACTOR))
    minimum = size_mib(conf[minimum_key]) if minimum_key and minimum_key in conf else MIN_OVERHEAD_MIB
    return max(math.floor(factor * memory), minimum)


def driver_container(conf: Mapping[str, str], deploy_mode: str) -> Container:
    """The ApplicationMaster's container: the driver's in cluster deploy mode (see the module doc)."""
    if deploy_mode == "cluster":
        memory = size_mib(conf.get("spark.driver.memory", "1g"))
        overhead = _overhead(conf, "spark.driver", memory, "spark.driver.minMemoryOverhead")
        cores = int(conf.get("spark.driver.cores", "1"))
        return Container("driver", memory + overhead, cores, f"{memory} MB + overhead {overhead} MB")
    memory = size_mib(conf.get("spark.yarn.am.memory", "512m"))
    overhead = _overhead(conf, "spark.yarn.am", memory, None)
    cores = int(conf.get("spark.yarn.am.cores", "1"))
    return Container("application master", memory + overhead, cores, f"{memory} MB + overhead {overhead} MB")


def executor_container(conf: Mapping[str, str]) -> Container:
    """Each executor's container (see the module doc)."""
    memory = size_mib(conf.get("spark.executor.memory", "1g"))
    overhead = _overhead(conf, "spark.executor", memory, "spark.executor.minMemoryOverhead")
    parts = [f"{memory} MB", f"overhead {overhead} MB"]
    total = memory + overhead
    if "spark.executor.pyspark.memory" in conf:
        python = size_mib(conf["spark.executor.pyspark.memory"])
        total += python
        parts.append(f"pyspark {python} MB")
    if str(conf.get("spark.memory.offHeap.enabled", "false")).lower() == "true":
        off_heap = size_mib(conf.get("spark.memory.offHeap.size", "0"), default_unit="b")
        total += off_heap
        parts.append(f"off-heap {off_heap} MB")
    cores = int(conf.get("spark.executor.cores", "1"))
    return Container("executor", total, cores, " + ".join(parts))
