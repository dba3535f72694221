"""Removing a YARN application's Spark staging directory when Spark's ApplicationMaster could not.

Spark's YARN client uploads what it ships (the driver's environment file among them) to the
application's staging directory, ``<spark.yarn.stagingDir>/<user>/.sparkStaging/<app id>``
or, without that setting, ``.sparkStaging/<app id>`` in the user's home directory on the
cluster's default filesystem (mode 700). The ApplicationMaster deletes it when it
unregisters: the application FINISHED, whether it succeeded or failed. An application the
RM killed, or whose ApplicationMaster died, ends in the YARN state KILLED or FAILED without
that, and spark-submit, which would delete it with ``waitAppCompletion=true``, has returned.
:class:`StagingCleaner` then deletes the directory itself with Hadoop's ``FsShell`` run by
the ``spark-class`` beside spark-submit (the Hadoop client of Spark's installation, the
cluster of ``HADOOP_CONF_DIR``): ``-rm -r -f -skipTrash <dir>``, a no-op when it is gone.
It costs one short JVM (about 2 s), on those paths only. A failure is logged, not raised:
the step fails anyway, with the application's own error.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from airflow_provider_eo.clients.yarn_resource_manager import YarnApplication

log = logging.getLogger(__name__)

#: YARN states in which the ApplicationMaster did not unregister (nor delete the staging dir).
UNCLEANED_STATES = frozenset({"KILLED", "FAILED"})
FS_SHELL = "org.apache.hadoop.fs.FsShell"
TIMEOUT_S = 120


def staging_dir(conf: Mapping[str, str], app: YarnApplication) -> str:
    """``app``'s staging directory as Spark's YARN client names it (see the module doc); a
    relative path is resolved by Hadoop in the user's home directory, as Spark does."""
    base = str(conf.get("spark.yarn.stagingDir") or "").rstrip("/")
    return f"{base}/{app.user}/.sparkStaging/{app.id}" if base else f".sparkStaging/{app.id}"


@dataclass(frozen=True)
class StagingCleaner:
    """Deletes the staging directory of an application that did not unregister.

    ``spark_binary`` is the submission's spark-submit (a name on ``PATH`` or a path), whose
    directory holds ``spark-class``; ``conf`` the submission's Spark conf."""

    spark_binary: str
    conf: Mapping[str, str]

    def __call__(self, app: YarnApplication) -> bool:
        """Delete ``app``'s staging directory when its state is KILLED or FAILED; True when
        ``FsShell`` ran and succeeded."""
        if app.state not in UNCLEANED_STATES:
            return False
        submit = shutil.which(self.spark_binary) or self.spark_binary
        spark_class = os.path.join(os.path.dirname(submit), "spark-class")
        path = staging_dir(self.conf, app)
        argv = [spark_class, FS_SHELL, "-rm", "-r", "-f", "-skipTrash", path]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.warning("YARN application %s: staging dir %s not removed: %s", app.id, path, exc)
            return False
        if done.returncode != 0:
            tail = " | ".join(done.stderr.strip().splitlines()[-3:])
            log.warning("YARN application %s: staging dir %s not removed: %s", app.id, path, tail)
            return False
        log.info("YARN application %s ended %s: its staging dir %s removed", app.id, app.state, path)
        return True
