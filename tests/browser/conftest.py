"""Browser tests: one headless Debian Chromium per session, screenshots kept as test output.

``chromium`` (session): the :class:`~tests.browser.browser.Browser`, started on first use
and quit at session end. ``browser``: the same browser for one test (named after it, back
in the top-level document). Screenshots go to ``test-output/screenshots/`` at the
repository root (``$EO_TEST_OUTPUT_DIR/screenshots/`` when set): one per step, plus
``NN-<test>-FAILED.png``/``.html`` when a test fails (and ``-timeout-…`` ones when a
bounded wait runs out); chromedriver's log is ``test-output/chromedriver.log``. Both are
emptied when the browser starts; the folder's path is printed in the summary. The marker
``browser`` is registered here.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from tests.browser.browser import Browser, start_chromium

REPO = Path(__file__).resolve().parents[2]
_started: list[Path] = []


def output_dir() -> Path:
    return Path(os.environ.get("EO_TEST_OUTPUT_DIR") or REPO / "test-output")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: drives Airflow's UI in headless Chromium (Selenium)")


@pytest.fixture(scope="session")
def chromium() -> Iterator[Browser]:
    shots = output_dir() / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    log = output_dir() / "chromedriver.log"
    for old in [*shots.glob("*.png"), *shots.glob("*.html"), log]:
        old.unlink(missing_ok=True)
    started = start_chromium(shots, log)
    _started.append(shots)
    print(f"browser screenshots: {shots}")
    try:
        yield started
    finally:
        started.driver.quit()


@pytest.fixture
def browser(chromium: Browser, request: pytest.FixtureRequest) -> Browser:
    chromium.test_name = request.node.name.removeprefix("test_")
    chromium.driver.switch_to.default_content()
    return chromium


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    browser = getattr(item, "funcargs", {}).get("browser")
    if report.when == "call" and report.failed and isinstance(browser, Browser):
        try:
            path = browser.dump("FAILED")
            report.sections.append(("browser", f"screenshot and page HTML of the failure: {path}"))
        except Exception as error:  # the browser itself may be what failed
            report.sections.append(("browser", f"no failure screenshot: {error}"))
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for shots in _started:
        count = len(list(shots.glob("*.png")))
        terminalreporter.write_line(f"browser screenshots: {shots} ({count} files)")
