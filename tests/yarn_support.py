"""The stack's YARN for tests: started once per session, and Spark applications on it.

``yarn`` (tests/conftest.py, session-scoped) starts YARN on the session's stack unless it is
running already, and stops it at the end only if it started it, so a reused stack
(``EO_TEST_REUSE_STACK_DIR`` with ``eo-stack up --yarn``) keeps its YARN. :func:`submit_cluster_app`
runs a pyspark script with ``spark-submit --master yarn --deploy-mode cluster`` and the
stack's :func:`~eo_devtools.stack.yarn_spark.yarn_spark_conf`; :func:`rm_app` and
:func:`container_stdout` read what the RM and the NodeManager kept of it.

spark-submit runs without ``PYTHONPATH``: Spark's YARN client copies the submitter's
``PYTHONPATH`` into every container's, which would let containers import this worktree.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eo_devtools.stack.stack import LocalStack
from eo_devtools.stack.yarn_config import nm_log_dir
from eo_devtools.stack.yarn_services import rest_json
from eo_devtools.stack.yarn_spark import conf_args, yarn_spark_conf, yarn_submit_env

SPARK_SUBMIT = str(Path(sys.executable).parent / "spark-submit")
APP_ID = re.compile(r"Submitted application (application_\d+_\d+)")


@dataclass(frozen=True)
class YarnInfo:
    """The running YARN of a stack: where its RM answers and what spark-submit needs (the
    NodeManager's pid, which a restart changes: ``LocalStack(state_dir).yarn_nodemanager_pid``)."""

    state_dir: Path
    webapp_url: str
    hadoop_conf_dir: Path

    @property
    def webapp_port(self) -> int:
        """The RM's REST/web UI port."""
        return int(self.webapp_url.rsplit(":", 1)[1])

    def spark_conf(self) -> dict[str, str]:
        """The cluster's settings for a pipeline's ``spark.conf`` (:func:`yarn_spark_conf`)."""
        return yarn_spark_conf(self.state_dir)

    def submit_env(self) -> dict[str, str]:
        """This process's environment without ``PYTHONPATH``, plus :func:`yarn_submit_env`."""
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        return {**env, **yarn_submit_env(self.state_dir)}


@contextmanager
def running_yarn(state_dir: Path, *, stop: bool = True) -> Iterator[YarnInfo]:
    """YARN on the stack in ``state_dir``: started unless it runs, stopped afterwards only if
    started here and ``stop`` (False: the caller kills the whole stack next)."""
    local = LocalStack(state_dir)
    status = local.status()
    ours = status.get("yarn-nodemanager", {}).get("healthy") is not True
    if ours:
        local.yarn_up()
    try:
        yield YarnInfo(local.state_dir, local.yarn_webapp_url, local.hadoop_conf_dir)
    finally:
        if ours and stop:
            local.yarn_down()


@dataclass(frozen=True)
class SubmittedApp:
    """One spark-submit: its exit code, its output (stdout then stderr) and the YARN app id."""

    returncode: int
    output: str
    app_id: str | None


def submit_cluster_app(
    yarn: YarnInfo, script: Path, *args: str, conf: dict[str, str] | None = None, timeout_s: float = 300
) -> SubmittedApp:
    """``spark-submit --master yarn --deploy-mode cluster`` of ``script`` with ``args``, the
    cluster's :meth:`YarnInfo.spark_conf` (``conf`` entries override it); waits for the end."""
    argv = [
        SPARK_SUBMIT, "--master", "yarn", "--deploy-mode", "cluster",
        *conf_args({**yarn.spark_conf(), **(conf or {})}), str(script), *args,
    ]  # fmt: skip
    done = subprocess.run(
        argv, env=yarn.submit_env(), capture_output=True, text=True, timeout=timeout_s, cwd=script.parent
    )
    output = done.stdout + done.stderr
    found = APP_ID.search(output)
    return SubmittedApp(done.returncode, output, found.group(1) if found else None)


def rm_app(webapp_url: str, app_id: str) -> dict[str, Any]:
    """The RM's ``/ws/v1/cluster/apps/<id>`` entry (``state``, ``finalStatus``, ``queue``, ...)."""
    data = rest_json(f"{webapp_url}/ws/v1/cluster/apps/{app_id}")
    if data is None:
        raise AssertionError(f"the RM at {webapp_url} does not answer about {app_id}")
    app: dict[str, Any] = data["app"]
    return app


def container_stdout(state_dir: Path, app_id: str, container: int = 1) -> str:
    """The ``stdout`` the NodeManager kept of container ``container`` (1: the AM, in cluster mode
    Spark's driver) of the application's first attempt; '' when there is none."""
    digits = app_id.removeprefix("application_")
    path = nm_log_dir(state_dir) / app_id / f"container_{digits}_01_{container:06d}" / "stdout"
    return path.read_text() if path.is_file() else ""
