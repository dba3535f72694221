"""The summed resident memory of every Spark process of a run, sampled: the ``session_fleet``
section's memory figure.

A :class:`SparkMemoryMeter` is given root processes whose trees hold the Spark processes:
the Spark Connect server (its JVM is the root; its Python workers are its descendants) or the
fleet's task processes (each ``spark-submit`` it starts: launcher, driver JVM, the driver's
Python and its Python workers, all descendants). Every ``interval_s`` it sums the RSS of the
processes :func:`is_spark_process` accepts in those trees; the peak is the largest sum at one
sample. The task processes themselves (the Airflow task's Python, holding the Kafka and Spark
Connect clients) are not Spark processes: their RSS is summed apart (``task_peak_rss_bytes``).

Summed RSS counts a page shared by several processes once per process: Python workers forked
from one daemon share most of their pages with it. ``peak_pss_bytes`` is the same peak in
proportional set size (each shared page divided among its sharers), the memory the processes
really hold together. ``peak_rss_by_kind`` splits the peak sample's RSS by
:func:`~benchmarks.cpu_components.spark_process_kind` (the Connect server's ``spark_jvm``
against its ``python_workers``: which one to size).

A JVM starts a process (the Connect server: Hadoop's shell commands as it stores a session's
artifacts; a driver: its Python) by ``posix_spawn``: the child runs in the JVM's own memory,
under the JVM's command line, until it executes ``jspawnhelper``, and ``/proc`` reports the
JVM's whole RSS for it meanwhile. Such a child (:func:`spawning_jvm`) is not counted: it would
count the JVM twice (a sample that caught one put the Connect server's "JVM" at 995 MB, twice
its resident size).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

import psutil

from benchmarks.cpu_components import spark_process_kind
from benchmarks.periodic_sampler import PeriodicSampler

SPARK_KINDS = frozenset({"spark_jvm", "launcher", "driver_python", "python_workers"})


def is_spark_process(cmdline: list[str], *, root: bool) -> bool:
    """True for a process of a Spark tree (:func:`~benchmarks.cpu_components.spark_process_kind`)
    other than a task process: a root is one only when it is a JVM (the Connect server)."""
    kind = spark_process_kind(cmdline)
    if root:
        return kind == "spark_jvm"
    return kind in SPARK_KINDS


def spawning_jvm(cmdline: list[str], parent_cmdline: list[str] | None) -> bool:
    """True for a JVM's child that still is that JVM (module doc): a ``spark_jvm`` command
    line equal to its parent's (a JVM starts no copy of itself)."""
    return bool(cmdline) and cmdline == parent_cmdline and spark_process_kind(cmdline) == "spark_jvm"


def summed_rss(samples: Iterable[tuple[bool, int]]) -> tuple[int, int]:
    """``(spark, task)`` bytes: the sizes of Spark processes and of the others, from
    ``(is_spark, size)`` pairs."""
    spark = task = 0
    for spark_process, size in samples:
        if spark_process:
            spark += size
        else:
            task += size
    return spark, task


class SparkMemoryMeter(PeriodicSampler):
    """Samples the trees of ``roots()`` (asked at every sample: task processes come and go)
    in a background thread between :meth:`start` and :meth:`stop`."""

    def __init__(self, roots: Callable[[], list[int]], interval_s: float = 0.2) -> None:
        super().__init__(interval_s, "spark-memory")
        self.roots = roots
        self.peak_rss_bytes = 0
        self.task_peak_rss_bytes = 0
        self.peak_pss_bytes = 0
        self.peak_rss_by_kind: dict[str, int] = {}
        self.samples = 0

    def _sample(self) -> None:
        seen: list[tuple[bool, int]] = []
        proportional: list[tuple[bool, int]] = []
        by_kind: Counter[str] = Counter()
        for pid in self.roots():
            try:
                root = psutil.Process(pid)
                tree = [(root, True), *((child, False) for child in root.children(recursive=True))]
            except psutil.Error:
                continue
            cmdlines: dict[int, list[str]] = {}
            for process, is_root in tree:
                try:
                    with process.oneshot():
                        cmdline = cmdlines[process.pid] = process.cmdline()
                        if not is_root and spawning_jvm(cmdline, cmdlines.get(process.ppid())):
                            continue
                        spark_process = is_spark_process(cmdline, root=is_root)
                        memory = process.memory_full_info()  # rss and pss (/proc/<pid>/smaps_rollup)
                    seen.append((spark_process, memory.rss))
                    if spark_process:
                        by_kind[spark_process_kind(cmdline) or "unknown"] += memory.rss
                    proportional.append((spark_process, getattr(memory, "pss", memory.rss)))
                except psutil.Error:
                    continue
        spark, task = summed_rss(seen)
        self.samples += 1
        if spark > self.peak_rss_bytes:
            self.peak_rss_bytes, self.peak_rss_by_kind = spark, dict(by_kind)
        self.task_peak_rss_bytes = max(self.task_peak_rss_bytes, task)
        self.peak_pss_bytes = max(self.peak_pss_bytes, summed_rss(proportional)[0])
