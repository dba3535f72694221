"""What the browser tests do in Airflow 3.3's React UI, by stable selectors.

Selectors come from the UI's own ``data-testid`` attributes (``trigger-dag-button``,
``trigger-dag-submit``, ``datetime-input``, ``state-badge``, ``table-cell-<column>``,
``basic-tooltip``, ``nav-sidebar``), form field names (``username``, ``element_<param>``),
ARIA roles (``dialog``) and visible texts (labels, button names), never CSS class names.

Where the UI keeps state out of the DOM the tests read what a person reads: a grid cell's
state is in its tooltip ("Run ID: ... / State: Success"), shown on hover.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from urllib.parse import unquote, urlsplit

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement

from tests.browser.browser import Browser

DIALOG = "[role=dialog][data-scope=dialog][data-state=open]"
POPOVER = "[role=dialog][data-scope=popover][data-state=open]"


def log_in(browser: Browser, base_url: str, username: str, password: str) -> None:
    """Sign out whatever session the browser holds (another test module may have signed in:
    one browser serves the whole session), open the UI, get redirected to the Simple auth
    manager's form, sign in, land on Home."""
    browser.open(base_url + "/")
    browser.driver.delete_all_cookies()
    browser.driver.execute_script("window.localStorage.clear(); window.sessionStorage.clear();")
    browser.open(base_url + "/")
    browser.wait("the redirect to the login form", lambda: "/auth/login" in browser.url)
    browser.shot("login-form")
    browser.element("input[name=username]").send_keys(username)
    browser.element("input[name=password]").send_keys(password)
    browser.click(browser.by_xpath("//form//button[@type='submit' and normalize-space(.)='Sign in']"))
    browser.element("[data-testid=nav-sidebar]", timeout=60)


def open_dag(browser: Browser, base_url: str, dag_id: str) -> None:
    """The DAG's page (grid on the left), once its Trigger button is there."""
    browser.open(f"{base_url}/dags/{dag_id}")
    browser.element("[data-testid=trigger-dag-button]", timeout=60)


def open_trigger_dialog(browser: Browser, title: str) -> WebElement:
    """Click Trigger; returns the open dialog once its heading reads ``title``."""
    browser.click(browser.element("[data-testid=trigger-dag-button]"))
    return browser.wait(f"dialog {title!r}", lambda: _dialog_titled(browser, title))


def _dialog_titled(browser: Browser, title: str) -> WebElement | None:
    for dialog in browser.driver.find_elements(By.CSS_SELECTOR, DIALOG):
        if dialog.is_displayed() and title in dialog.text.splitlines()[:1]:
            return dialog
    return None


def choose_backfill(browser: Browser, dag_id: str) -> WebElement:
    """In the Trigger dialog, pick "Backfill": returns the "Run Backfill - <dag>" dialog."""
    dialog = browser.element(DIALOG)
    browser.click(dialog.find_element(By.XPATH, ".//label[.//input[@type='radio' and @value='backfill']]"))
    return browser.wait("the Backfill dialog", lambda: _dialog_titled(browser, f"Run Backfill - {dag_id}"))


def param_field(dialog: WebElement, label: str) -> WebElement:
    """The form field group (``role=group``) whose label starts with ``label``."""
    return dialog.find_element(
        By.XPATH, f".//label[starts-with(normalize-space(.), '{label}')]/ancestor::*[@role='group'][1]"
    )


def type_json_param(browser: Browser, dialog: WebElement, label: str, text: str) -> None:
    """Replace the JSON in a param's code editor (Monaco: array/object params). The editor
    closes brackets itself, so ``text`` is typed without its closing brackets."""
    editor = param_field(dialog, label).find_element(By.CSS_SELECTOR, ".monaco-editor .view-lines")
    browser.replace_text(editor, text)


def pick_datetime(browser: Browser, field: WebElement, moment: datetime) -> None:
    """Open a ``datetime-input`` picker, type the UTC date and time, close the picker."""
    browser.click(field)
    popover = browser.element(POPOVER)
    date_input, time_input = popover.find_elements(By.CSS_SELECTOR, "input")[:2]
    browser.replace_text(date_input, moment.strftime("%Y/%m/%d"))
    browser.replace_text(time_input, moment.strftime("%H:%M"))
    time_input.send_keys(Keys.ESCAPE)
    browser.wait(
        "the date picker to close", lambda: not browser.driver.find_elements(By.CSS_SELECTOR, POPOVER)
    )


def ui_datetime(moment: datetime) -> str:
    """How the UI shows a date-time in a picker field: ``Nov 21, 2026 23:59``."""
    return f"{moment:%b} {moment.day}, {moment:%Y %H:%M}"


def run_id_from_url(browser: Browser, dag_id: str) -> str | None:
    """The run id when the browser shows ``/dags/<dag_id>/runs/<run_id>`` (else None)."""
    parts = urlsplit(browser.url).path.split("/")
    if parts[1:4] == ["dags", dag_id, "runs"] and len(parts) > 4 and parts[4]:
        return unquote(parts[4])
    return None


def run_header_state(browser: Browser, run_id: str) -> str:
    """The state badge next to the run's heading on its run page ("Success", "Running", ...)."""
    badge = browser.driver.find_element(
        By.XPATH, f"//h2[contains(normalize-space(.), '{run_id}')]/..//*[@data-testid='state-badge']"
    )
    return str(badge.text)


def grid_tooltip(browser: Browser, run_id: str) -> str:
    """Hover the run's bar in the grid and return its tooltip ("...Run ID: <id> State: <state>...")."""
    bar = browser.driver.find_element(By.CSS_SELECTOR, f'[data-run-id="{run_id}"] a[href$="/runs/{run_id}/"]')
    browser.hover(bar)
    tip = browser.wait(
        f"the grid tooltip of {run_id}",
        lambda: next(
            (
                t
                for t in browser.driver.find_elements(By.CSS_SELECTOR, "[data-testid=basic-tooltip]")
                if run_id in t.text
            ),
            None,
        ),
        timeout=10,
    )
    return " ".join(str(tip.text).split())


@dataclass(frozen=True)
class TaskRow:
    """One row of a run's "Task Instances" table, as shown."""

    task: str
    label: str  # the rendered map index (the epoch/chunk label of a mapped or labelled task)
    state: str


def task_rows(browser: Browser) -> list[TaskRow]:
    """The rows of the run page's Task Instances table, sorted by task and label, once the
    table holds as many rows as its heading ("N Task Instances") announces."""
    heading = browser.by_xpath("//*[not(*) and substring-after(normalize-space(.), ' ') = 'Task Instances']")
    announced = int(heading.text.split()[0])
    rows = []
    for row in browser.driver.find_elements(By.CSS_SELECTOR, "[data-testid=table-list] tbody tr"):
        cells = {
            c.get_attribute("data-testid"): " ".join(c.text.split())
            for c in row.find_elements(By.TAG_NAME, "td")
        }
        rows.append(
            TaskRow(
                cells["table-cell-task_display_name"],
                cells["table-cell-rendered_map_index"],
                cells["table-cell-state"],
            )
        )
    if len(rows) != announced:
        raise LookupError(f"{len(rows)} rows shown of {announced} task instances")
    return sorted(rows, key=lambda r: (r.task, r.label))


def run_list_row(browser: Browser, run_id: str) -> dict[str, str]:
    """The cells (column id -> text) of the Runs tab's row of ``run_id``."""
    for row in browser.driver.find_elements(By.CSS_SELECTOR, "[data-testid=table-list] tbody tr"):
        cells = {
            str(c.get_attribute("data-testid")).removeprefix("table-cell-"): " ".join(c.text.split())
            for c in row.find_elements(By.TAG_NAME, "td")
        }
        if cells.get("dag_run_id") == run_id:
            return cells
    raise LookupError(f"no row of run {run_id} in the run list")


def extra_link(browser: Browser, name: str) -> WebElement:
    """The extra link ``name`` of the task instance page's Details tab ("Extra Links")."""
    section = browser.by_xpath("//*[normalize-space(.)='Extra Links']/..", timeout=60)
    return browser.by_xpath(f".//a[normalize-space(.)='{name}']", within=section)
