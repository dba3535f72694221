"""One headless Chromium (Debian's ``chromium`` + ``chromium-driver``) driven by Selenium.

:func:`start_chromium` starts the system browser through the system chromedriver (never a
browser download: Selenium Manager is not asked for anything), headless, with a fixed
window size, the UTC time zone (the dates the tests type are UTC) and ``--no-sandbox``
when running as root. :class:`Browser` wraps the driver with

* :meth:`Browser.shot`: a numbered screenshot per step into the screenshots folder;
* :meth:`Browser.wait`: a bounded wait for a condition that fails with a clear message
  (what was awaited, the page's URL, a screenshot and the page's HTML);
* small helpers to click, hover and type where React re-renders elements under us.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement

T = TypeVar("T")
WINDOW_SIZE = (1600, 1000)
PAGE_LOAD_TIMEOUT_S = 60
DEFAULT_WAIT_S = 30.0
POLL_S = 0.2
"""Seconds between two looks of a wait (each a WebDriver round trip of a few milliseconds)."""


def system_chromium() -> tuple[str, str]:
    """Paths of Debian's ``chromium`` and ``chromedriver``; RuntimeError naming the fix when absent."""
    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not browser or not driver:
        raise RuntimeError(
            "browser tests need Debian's chromium and chromium-driver (scripts/setup.sh installs them)"
        )
    return browser, driver


class Browser:
    """A Selenium driver plus numbered screenshots in ``shots_dir`` and bounded waits."""

    def __init__(self, driver: webdriver.Chrome, shots_dir: Path) -> None:
        self.driver = driver
        self.shots_dir = shots_dir
        self.test_name = "session"
        self._count = 0

    # -- evidence ----------------------------------------------------------------------
    def shot(self, step: str) -> Path:
        """Save a screenshot ``NN-<test>-<step>.png`` and return its path."""
        self._count += 1
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{self._count:02d}-{self.test_name}-{step}")
        path = self.shots_dir / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def dump(self, step: str) -> Path:
        """Screenshot plus the page's HTML (``.html`` beside it); returns the screenshot's path."""
        path = self.shot(step)
        with_html = path.with_suffix(".html")
        with_html.write_text(self.driver.page_source)
        return path

    # -- navigation and waits ------------------------------------------------------------
    def open(self, url: str) -> None:
        self.driver.get(url)

    @property
    def url(self) -> str:
        return str(self.driver.current_url)

    def wait(self, what: str, condition: Callable[[], T | None], timeout: float = DEFAULT_WAIT_S) -> T:
        """Poll ``condition`` until it returns something truthy (returned) or ``timeout`` passes.

        Exceptions of a page being re-rendered (stale or missing elements) count as "not yet".
        On timeout: AssertionError naming ``what``, the URL, the last error and the saved
        screenshot/HTML.
        """
        deadline = time.monotonic() + timeout
        last_error = ""
        while True:
            try:
                value = condition()
                if value:
                    return value
                last_error = f"last value {value!r}"
            except (WebDriverException, LookupError, ValueError) as error:
                last_error = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
            if time.monotonic() >= deadline:
                evidence = self.dump(f"timeout-{what[:40]}")
                raise AssertionError(
                    f"waited {timeout:.0f}s for {what} at {self.url} ({last_error}); page saved as {evidence}"
                )
            time.sleep(POLL_S)

    def element(
        self, css: str, timeout: float = DEFAULT_WAIT_S, within: WebElement | None = None
    ) -> WebElement:
        """The first displayed element matching ``css`` (waits for it)."""
        root = within or self.driver

        def found() -> WebElement | None:
            return next((e for e in root.find_elements(By.CSS_SELECTOR, css) if e.is_displayed()), None)

        return self.wait(f"element {css}", found, timeout)

    def by_xpath(
        self, xpath: str, timeout: float = DEFAULT_WAIT_S, within: WebElement | None = None
    ) -> WebElement:
        """The first displayed element matching ``xpath`` (waits for it)."""
        root = within or self.driver

        def found() -> WebElement | None:
            return next((e for e in root.find_elements(By.XPATH, xpath) if e.is_displayed()), None)

        return self.wait(f"element {xpath}", found, timeout)

    # -- interaction ---------------------------------------------------------------------
    def click(self, element: WebElement) -> None:
        """Scroll ``element`` to the middle of the view and click it."""
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
        element.click()

    def hover(self, element: WebElement) -> None:
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
        ActionChains(self.driver).move_to_element(element).perform()

    def replace_text(self, element: WebElement, text: str) -> None:
        """Click ``element``, select everything in it, delete it and type ``text`` (works for
        inputs and for code editors that keep their own selection model)."""
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
        chain = ActionChains(self.driver).move_to_element(element).click()
        chain.key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL).send_keys(Keys.DELETE)
        chain.send_keys(text).perform()

    def text_of(self, element: WebElement) -> str:
        try:
            return str(element.text)
        except StaleElementReferenceException:
            return ""


def start_chromium(shots_dir: Path, log_file: Path) -> Browser:
    """Start the system Chromium headless (see the module doc); chromedriver logs to ``log_file``."""
    browser_path, driver_path = system_chromium()
    options = Options()
    options.binary_location = browser_path
    for argument in (
        "--headless=new",
        f"--window-size={WINDOW_SIZE[0]},{WINDOW_SIZE[1]}",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--lang=en-US",
        "--no-first-run",
    ):
        options.add_argument(argument)
    if os.geteuid() == 0:
        options.add_argument("--no-sandbox")  # Chromium refuses to sandbox as root
    service = Service(driver_path, log_output=str(log_file), env={**os.environ, "TZ": "UTC"})
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(PAGE_LOAD_TIMEOUT_S)
    return Browser(driver, shots_dir)
