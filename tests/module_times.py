"""Where the suite's minutes go: wall time per test module (the setup, call and teardown of
its tests, module-scoped fixtures included), the 40 slowest printed at the end of a run."""

from __future__ import annotations

from collections import defaultdict

import pytest

SHOWN = 40
_seconds: defaultdict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _seconds[report.nodeid.split("::", 1)[0]] += report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _seconds:
        return
    total = sum(_seconds.values())
    terminalreporter.section(f"slowest {SHOWN} modules (of {total:.0f} s in tests)")
    for module, seconds in sorted(_seconds.items(), key=lambda item: -item[1])[:SHOWN]:
        terminalreporter.write_line(f"{seconds:8.1f}s {100 * seconds / total:5.1f}%  {module}")
