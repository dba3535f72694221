"""Where the Epochs pages and Airflow's own pages are, for links both ways. Import-free.

The plugin's app is mounted at :data:`PLUGIN_PREFIX` (``/eo``); its nav entry's route in
Airflow's UI is :data:`NAV_ROUTE`. Airflow 3.3 deep-links a nav plugin's iframe:
``<ui>/plugin/<route><path>`` shows the UI with the iframe at ``<path>`` (and follows the
iframe's location back into the address bar), which is how a task's extra link opens an
epoch's page inside the UI (:func:`epoch_page_in_airflow`).

Links from the plugin's pages to Airflow's are relative (:func:`airflow_run`,
:func:`airflow_task`: resolved against the UI's root, so a UI served under a path works)
and target ``_top`` (page.py explains the iframe's sandbox).
"""

from __future__ import annotations

from urllib.parse import quote, urlencode, urlsplit

PLUGIN_PREFIX = "/eo"
NAV_ROUTE = "eo-epochs"
DAG_TAB_ROUTE = "eo-dag-epochs"


def _segment(value: str) -> str:
    return quote(value, safe="")


def epoch_page(epoch_id: int) -> str:
    """The epoch's page, relative to the plugin's root (``/eo/``): ``epochs/<id>``."""
    return f"epochs/{int(epoch_id)}"


def audit_page(audit_id: int) -> str:
    """A kept audit's page, relative to the plugin's root (``/eo/``): ``audits/<id>``."""
    return f"audits/{int(audit_id)}"


def epoch_page_in_airflow(base_url: str | None, epoch_id: int) -> str:
    """The epoch's page inside Airflow's UI at ``base_url`` (``[api] base_url``; None or
    empty: a root-relative link): ``<base>/plugin/eo-epochs<base path>/eo/epochs/<id>``."""
    base = (base_url or "").strip().rstrip("/")
    path = urlsplit(base).path.rstrip("/") if "://" in base else base
    return f"{base}/plugin/{NAV_ROUTE}{path}{PLUGIN_PREFIX}/{epoch_page(epoch_id)}"


def airflow_run(dag_id: str, run_id: str) -> str:
    """The run's page in Airflow's UI (its grid and details), relative to the UI's root."""
    return f"dags/{_segment(dag_id)}/runs/{_segment(run_id)}"


def airflow_task(
    dag_id: str, run_id: str, task_id: str, *, mapped: bool = False, try_number: int | None = None
) -> str:
    """A task instance's page (its log first), relative to the UI's root: ``mapped``, the
    list of a mapped task's instances; ``try_number``, that try's log."""
    path = f"{airflow_run(dag_id, run_id)}/tasks/{_segment(task_id)}"
    if mapped:
        path += "/mapped"
    return path + (f"?{urlencode({'try_number': try_number})}" if try_number is not None else "")
