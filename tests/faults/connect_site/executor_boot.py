"""The Python that the fault suite's Spark Connect server runs for its workers (``python -S
executor_boot.py -m pyspark.daemon ...``): it adds one audit hook, then runs the module.

The hook pauses a write task at ``spark.task.after_segment`` (right after an HBase segment
is written) while the gate file named by ``EO_FAULT_GATE_FILE`` exists, appending this
process's pid to ``<gate>.paused`` first, and resumes when the gate is removed (600 s at
most). Self-contained (the workers run with ``-S`` and without this repository on their
path): the provider the tasks run is still the one the job's artifact brings
(``tests/faults/connect_server.py``).
"""

from __future__ import annotations

import os
import runpy
import sys
import time
from typing import Any

GATE_ENV = "EO_FAULT_GATE_FILE"
POINT = "spark.task.after_segment"
MAX_PAUSE_S = 600.0


def pause_at_segment(event: str, args: tuple[Any, ...]) -> None:
    """The audit hook: pause while the gate exists, at :data:`POINT` only."""
    if event != "eo.protocol_point" or not args or args[0] != POINT:
        return
    gate = os.environ.get(GATE_ENV)
    if not gate or not os.path.exists(gate):
        return
    with open(f"{gate}.paused", "a") as paused:
        paused.write(f"{os.getpid()}\n")
    deadline = time.monotonic() + MAX_PAUSE_S
    while os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.1)


def main() -> None:
    if sys.argv[1:2] != ["-m"] or len(sys.argv) < 3:  # anything but a module run: plain Python
        os.execv(sys.executable, [sys.executable, "-S", *sys.argv[1:]])
    module = sys.argv[2]
    sys.argv = [module, *sys.argv[3:]]
    sys.addaudithook(pause_at_segment)
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
