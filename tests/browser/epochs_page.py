"""Reading the provider's Epochs page (``/eo/``, plugin ``eo``) as the browser shows it.

The page is server-rendered HTML (airflow_provider_eo/plugins/page.py): a table
``#pipelines`` whose partition cells are ``span.partition`` with ``data-topic``,
``data-partition`` and ``data-lag``, the selected pipeline's charts (``#charts``: every
data point an element of class ``point`` with its values in ``data-*`` attributes), and a
table ``#epochs`` with one ``tr.epoch`` per epoch, its id a link (``a.epoch-link``) to the
epoch's own page (``h1#epoch``, airflow_provider_eo/plugins/epoch_page.py). Inside
Airflow's UI it is shown in an iframe (the "Epochs" entry of the navigation bar and the
"Epochs" tab of every DAG): :func:`enter_epochs_iframe` switches into it.
"""

from __future__ import annotations

from dataclasses import dataclass

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from tests.browser.browser import Browser


@dataclass(frozen=True)
class EpochRow:
    """One row of "Recent epochs", as shown (ranges exactly as printed: ``topic[p] [start, end)``)."""

    epoch_id: int
    pipeline: str
    kind: str
    state: str
    dag_id: str
    run_id: str
    ranges: tuple[str, ...]
    records: int


@dataclass(frozen=True)
class PartitionCell:
    """One partition of a pipeline row: its ``data-*`` attributes and its visible text."""

    topic: str
    partition: int
    lag: str
    text: str


def enter_epochs_iframe(browser: Browser, src_contains: str, ready: str = "table#epochs") -> None:
    """Switch into the Airflow UI's plugin iframe whose ``src`` contains ``src_contains``,
    once it shows ``ready`` (a CSS selector)."""
    frame = browser.element(f'iframe[src*="{src_contains}"]', timeout=60)
    browser.driver.switch_to.frame(frame)
    browser.element(ready)


CHART_POINTS = """
return Array.from(document.querySelectorAll("#charts .point")).map(function (point) {
  var found = {};
  point.getAttributeNames().forEach(function (name) {
    if (name.indexOf("data-") === 0) found[name.slice(5)] = point.getAttribute(name);
  });
  return found;
});
"""


def chart_points(browser: Browser) -> list[dict[str, str]]:
    """The ``data-*`` attributes (without the prefix) of every chart point, sorted (one
    WebDriver call: a script reading the attributes in the page)."""
    found = browser.driver.execute_script(CHART_POINTS)
    return sorted(({str(k): str(v) for k, v in p.items()} for p in found), key=lambda p: sorted(p.items()))


def open_epoch(browser: Browser, epoch_id: int) -> None:
    """Click the epoch's id in the epochs table: the iframe shows the epoch's page."""
    browser.click(
        browser.by_xpath(f"//table[@id='epochs']//a[@class='epoch-link' and normalize-space(.)='{epoch_id}']")
    )
    browser.wait(
        f"epoch {epoch_id}'s page",
        lambda: browser.element("h1#epoch").get_attribute("data-epoch-id") == str(epoch_id),
    )


def epoch_rows(browser: Browser) -> list[EpochRow]:
    """Every ``tr.epoch`` of the page, in page order (newest first)."""
    rows = []
    for row in browser.driver.find_elements(By.CSS_SELECTOR, "table#epochs tr.epoch"):
        cells = row.find_elements(By.TAG_NAME, "td")
        dag_id, run_id = (c.text for c in cells[4].find_elements(By.TAG_NAME, "code"))
        ranges = tuple(c.text for c in cells[5].find_elements(By.TAG_NAME, "code"))
        rows.append(
            EpochRow(
                epoch_id=int(cells[0].text),
                pipeline=cells[1].text,
                kind=cells[2].text,
                state=cells[3].text,
                dag_id=dag_id,
                run_id=run_id,
                ranges=ranges,
                records=int(cells[6].text),
            )
        )
    return rows


def partition_cells(browser: Browser, pipeline: str) -> list[PartitionCell]:
    """The partitions shown in ``pipeline``'s row of the Pipelines table."""
    row = browser.driver.find_element(
        By.XPATH, f"//table[@id='pipelines']//tr[@class='pipeline'][td[1]/a[normalize-space(.)='{pipeline}']]"
    )
    return [
        PartitionCell(
            topic=str(span.get_attribute("data-topic")),
            partition=int(str(span.get_attribute("data-partition"))),
            lag=str(span.get_attribute("data-lag")),
            text=" ".join(span.text.split()),
        )
        for span in row.find_elements(By.CSS_SELECTOR, "span.partition")
    ]


def total_lag(browser: Browser, pipeline: str) -> str:
    """The "Total lag" cell of ``pipeline``'s row."""
    cell = browser.driver.find_element(
        By.XPATH,
        f"//table[@id='pipelines']//tr[@class='pipeline'][td[1]/a[normalize-space(.)='{pipeline}']]"
        "/td[contains(@class, 'total-lag')]",
    )
    return str(cell.text)


def filter_pipeline(browser: Browser, pipeline: str) -> None:
    """Choose ``pipeline`` in the filter form and press Show (a plain GET form)."""
    Select(browser.element("select[name=pipeline]")).select_by_visible_text(pipeline)
    browser.click(browser.by_xpath("//form//button[normalize-space(.)='Show']"))
    browser.wait(
        f"the page filtered on {pipeline}",
        lambda: (
            Select(browser.element("select[name=pipeline]")).first_selected_option.text == pipeline
            and f"pipeline={pipeline}" in str(browser.driver.execute_script("return location.search"))
        ),
    )
