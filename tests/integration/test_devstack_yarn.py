"""The stack's YARN (``eo-stack up --yarn``): a real ResourceManager and NodeManager, and one
pyspark application in cluster mode on them.

Checked through the RM's REST API: the capacity scheduler's only queue is ``default``; one
NodeManager is RUNNING with the memory and vcores the stack configures; a pyspark script
submitted with ``--master yarn --deploy-mode cluster`` ends FINISHED/SUCCEEDED in that queue,
and its driver (the AM's container) printed exactly ``sum(range(100))`` to the stdout the
NodeManager kept. One application only: it costs about 40 s.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eo_devtools.stack.yarn_config import NM_MEMORY_MB, NM_VCORES
from eo_devtools.stack.yarn_services import cluster_nodes, rest_json
from tests.yarn_support import YarnInfo, container_stdout, rm_app, submit_cluster_app

pytestmark = [pytest.mark.integration, pytest.mark.spark]

SCRIPT = """\
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
total = spark.sparkContext.parallelize(range(100), 2).sum()
print(f"yarn-sum={total}")
spark.stop()
"""


def test_rm_has_the_default_queue_and_one_running_node(yarn: YarnInfo) -> None:
    scheduler = rest_json(f"{yarn.webapp_url}/ws/v1/cluster/scheduler")
    assert scheduler is not None
    info = scheduler["scheduler"]["schedulerInfo"]
    assert info["type"] == "capacityScheduler"
    assert [queue["queueName"] for queue in info["queues"]["queue"]] == ["default"]
    running = [node for node in cluster_nodes(yarn.webapp_port) if node["state"] == "RUNNING"]
    assert len(running) == 1
    total = running[0]["totalResource"]
    assert (total["memory"], total["vCores"]) == (NM_MEMORY_MB, NM_VCORES)


def test_pyspark_app_in_cluster_mode_succeeds_with_the_exact_sum(yarn: YarnInfo, tmp_path: Path) -> None:
    script = tmp_path / "yarn_sum.py"
    script.write_text(SCRIPT)
    submitted = submit_cluster_app(yarn, script, conf={"spark.app.name": "eo-yarn-sum"})
    assert submitted.returncode == 0, submitted.output[-3000:]
    assert submitted.app_id is not None, submitted.output[-3000:]
    app = rm_app(yarn.webapp_url, submitted.app_id)
    assert (app["state"], app["finalStatus"], app["queue"], app["name"]) == (
        "FINISHED",
        "SUCCEEDED",
        "root.default",
        "eo-yarn-sum",
    )
    stdout = container_stdout(yarn.state_dir, submitted.app_id).splitlines()
    assert [line for line in stdout if line.startswith("yarn-sum=")] == ["yarn-sum=4950"]
