"""What a write submission to a YARN master adds: its tags, two settings, its RM and queue.

* **Tags** (:func:`submission_tags`): ``spark.yarn.tags`` names the pipeline, the epoch and
  the try (``eo-pipeline-<p>,eo-epoch-<id>,eo-try-<n>``) and carries
  ``eo-submission-<uuid>``, unique to the submission: the write step finds its application
  in the ResourceManager by that tag, without parsing spark-submit's output, and ``on_kill``
  kills it by that tag even when spark-submit is gone.
* **Settings** (:func:`yarn_conf`), each only where the pipeline's ``spark.conf`` leaves
  it unset: ``spark.yarn.maxAppAttempts=1`` (Airflow's retries and the epoch's recovery
  are the one retry policy; a second ApplicationMaster attempt would rerun the whole epoch
  unseen by Airflow), and in cluster deploy mode ``spark.yarn.submit.waitAppCompletion=false``
  (spark-submit returns once YARN accepted the application; the write step then tracks it
  through the RM, :mod:`.yarn_tracking`). The pipeline's own ``spark.yarn.tags`` are kept.
* **The ResourceManager** (:func:`resource_manager`): the address is the Spark
  connection's extra ``yarn_resourcemanager_webapp_address`` (the Spark provider's key).
* **The queue** (:func:`submission_queue`): what spark-submit will use.

:func:`yarn_submission` applies the tags and settings to a submission's conf and sets up
the tracking of its application (:mod:`.yarn_tracking`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from airflow.sdk import Connection

from airflow_provider_eo.clients.yarn_resource_manager import ResourceManager
from airflow_provider_eo.operators.yarn_staging import StagingCleaner
from airflow_provider_eo.operators.yarn_tracking import YarnTracking

TAGS_KEY = "spark.yarn.tags"
MAX_ATTEMPTS_KEY = "spark.yarn.maxAppAttempts"
WAIT_KEY = "spark.yarn.submit.waitAppCompletion"
QUEUE_KEY = "spark.yarn.queue"
#: The Spark provider's extra key for the RM's web address (its ``yarn_track_via_rm_api``'s too).
RM_ADDRESS_EXTRA = "yarn_resourcemanager_webapp_address"
#: YARN's limit on one tag's length (``YarnConfiguration.APPLICATION_MAX_TAG_LENGTH``).
MAX_TAG_LENGTH = 100


def submission_tag(submission_id: str) -> str:
    """The tag unique to one submission (how the write step and ``on_kill`` find its application)."""
    return f"eo-submission-{submission_id}".lower()


def submission_tags(
    pipeline: str, epoch_id: str | int, try_number: int | None, submission_id: str
) -> list[str]:
    """The submission's YARN tags: pipeline, epoch, try (``?`` unknown) and :func:`submission_tag`;
    lowercase (YARN lowers them), each cut to YARN's 100 characters."""
    tags = [
        f"eo-pipeline-{pipeline}",
        f"eo-epoch-{epoch_id}",
        f"eo-try-{try_number if try_number is not None else '?'}",
        submission_tag(submission_id),
    ]
    return [tag.lower()[:MAX_TAG_LENGTH] for tag in tags]


def yarn_conf(conf: Mapping[str, str], *, deploy_mode: str, tags: list[str]) -> dict[str, str]:
    """``conf`` with the tags (after the pipeline's own) and the defaults of the module doc."""
    result = dict(conf)
    own = [tag for tag in str(conf.get(TAGS_KEY, "")).split(",") if tag.strip()]
    result[TAGS_KEY] = ",".join([*own, *tags])
    result.setdefault(MAX_ATTEMPTS_KEY, "1")
    if deploy_mode == "cluster":
        result.setdefault(WAIT_KEY, "false")
    return result


def rm_address(connection: Connection | None) -> str | None:
    """The connection's ``yarn_resourcemanager_webapp_address`` (None: unset or no connection)."""
    if connection is None:
        return None
    return str(connection.extra_dejson.get(RM_ADDRESS_EXTRA) or "").strip() or None


def resource_manager(connection: Connection | None, conn_id: str, auth: Any = None) -> ResourceManager | None:
    """The RM of the Spark connection ``conn_id`` (None: it names none); ``auth``: requests auth."""
    address = rm_address(connection)
    if address is None:
        return None
    return ResourceManager(address, where=f"Spark connection {conn_id!r}", auth=auth)


def submission_queue(yarn_queue: str | None, connection: Connection | None, conf: Mapping[str, str]) -> str:
    """The queue spark-submit submits to: the operator's ``yarn_queue``, else the connection's
    extra ``queue`` (both become ``--queue``), else ``spark.yarn.queue``, else ``default``."""
    extra_queue = connection.extra_dejson.get("queue") if connection is not None else None
    return str(yarn_queue or extra_queue or conf.get(QUEUE_KEY) or "default")


def yarn_submission(
    conf: Mapping[str, str],
    *,
    pipeline: str,
    epoch_id: str | int,
    try_number: int | None,
    deploy_mode: str,
    rm: ResourceManager | None,
    poll_s: float,
    spark_binary: str,
) -> tuple[dict[str, str], YarnTracking | None]:
    """A new submission's conf (:func:`yarn_conf` with :func:`submission_tags` under a fresh
    submission id) and the tracking of its application by its tag through ``rm``, polled
    every ``poll_s`` seconds, its staging dir removed with ``spark_binary``'s ``spark-class``
    if it ends unsucceeded (:mod:`.yarn_staging`); None without an RM."""
    submission_id = uuid.uuid4().hex
    tags = submission_tags(pipeline, epoch_id, try_number, submission_id)
    conf = yarn_conf(conf, deploy_mode=deploy_mode, tags=tags)
    if rm is None:
        return conf, None
    what = f"pipeline {pipeline} epoch {epoch_id}"
    cleaner = StagingCleaner(spark_binary, conf)
    return conf, YarnTracking(rm, submission_tag(submission_id), what, poll_s, clean=cleaner)


def submit_binary(settings: Mapping[str, Any], connection: Connection | None) -> str:
    """The spark-submit the hook runs: the operator's ``spark_binary``, else the connection's
    extra ``spark-binary``, else ``spark-submit`` (the Spark provider's order)."""
    extra = connection.extra_dejson.get("spark-binary") if connection is not None else None
    return str(settings.get("spark_binary") or extra or "spark-submit")
