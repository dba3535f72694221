"""``EpochPageLink``: the "Epoch" extra link of the write and commit tasks.

Airflow 3 computes an operator's extra links in the worker when the task instance ends
(``get_link`` on the rendered task) and stores each in XCom (``_link_EpochPageLink``); the
UI's task instance page shows them under "Extra Links". This one leads to the epoch's
page inside Airflow's UI (``ui_links.epoch_page_in_airflow``: the Epochs nav entry with
its iframe at ``/eo/epochs/<id>``), so the run's grid links back to the ledger. The epoch
is the task's own ``epoch_id``, as rendered from the reserve task's XCom (stream write and
commit), from the chunk's write (a backfill chunk's commit), or set by the chunk's write
when it reserved; a task that has none (it failed before) gets no link.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperatorLink
from airflow.sdk.configuration import conf

from airflow_provider_eo.ui_links import epoch_page_in_airflow


def rendered_epoch_id(value: Any) -> int | None:
    """``value`` as an epoch id (an int, or a rendered template such as ``"42"``); None when
    it is not one (unset, or a template that was never rendered)."""
    try:
        return int(str(value).strip()) if value is not None else None
    except ValueError:
        return None


class EpochPageLink(BaseOperatorLink):
    """The epoch's page in Airflow's UI (empty, so not shown, without an epoch id)."""

    name = "Epoch"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        """The link of ``operator``'s epoch, on ``[api] base_url`` (root-relative without it)."""
        epoch_id = rendered_epoch_id(getattr(operator, "epoch_id", None))
        if epoch_id is None:
            return ""
        return epoch_page_in_airflow(conf.get("api", "base_url", fallback=None), epoch_id)
