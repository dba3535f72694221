"""Logging setup for the Spark driver and the Python workers.

One line per event, ``time level logger message``; messages carry their context
as ``key=value`` pairs (pipeline, epoch_id, topic/partition, ranges). Nothing
logged here may contain a connection value: only ids, names, offsets and counts.
"""

from __future__ import annotations

import logging
import os
import sys

FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def configure_logging(level: str | None = None) -> None:
    """Configure the ``airflow_provider_eo`` loggers once (stderr; level from ``EO_LOG_LEVEL``)."""
    logger = logging.getLogger("airflow_provider_eo")
    if logger.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    logger.addHandler(handler)
    logger.setLevel(level or os.environ.get("EO_LOG_LEVEL", "INFO"))
    logger.propagate = False
