"""Reading the provider's Epochs page (``/eo/``, plugin ``eo``) as the browser shows it.

The page is server-rendered HTML (airflow_provider_eo/plugins/page.py): a table
``#pipelines`` whose partition cells are ``span.partition`` with ``data-topic``,
``data-partition`` and ``data-lag``, and a table ``#epochs`` with one ``tr.epoch`` per
epoch. Inside Airflow's UI it is shown in an iframe (the "Epochs" entry of the navigation
bar and the "Epochs" tab of every DAG): :func:`enter_epochs_iframe` switches into it.
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


def enter_epochs_iframe(browser: Browser, src_contains: str) -> None:
    """Switch into the Airflow UI's plugin iframe whose ``src`` contains ``src_contains``."""
    frame = browser.element(f'iframe[src*="{src_contains}"]', timeout=60)
    browser.driver.switch_to.frame(frame)
    browser.element("table#epochs")


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
