"""What a YARN submission adds, computed without a cluster: tags, settings, container sizes,
the queue lookup, and the RM's answers read into values (shapes captured from Hadoop 3.5.0)."""

from __future__ import annotations

import socket

import pytest

from airflow_provider_eo.clients.yarn_resource_manager import (
    ResourceManager,
    ResourceManagerUnavailable,
    YarnApplication,
    YarnQueue,
    capacity_queues,
)
from airflow_provider_eo.operators import yarn_tracking
from airflow_provider_eo.operators.yarn_containers import driver_container, executor_container, size_mib
from airflow_provider_eo.operators.yarn_preflight import find_queue
from airflow_provider_eo.operators.yarn_staging import staging_dir
from airflow_provider_eo.operators.yarn_submission import submission_queue, submission_tags, yarn_conf


def test_tags_name_pipeline_epoch_try_and_the_submission_in_yarns_lowercase() -> None:
    assert submission_tags("Orders.EU", 42, 3, "ABC123") == [
        "eo-pipeline-orders.eu", "eo-epoch-42", "eo-try-3", "eo-submission-abc123"
    ]  # fmt: skip
    long = submission_tags("p" * 150, 1, None, "x")
    assert (len(long[0]), long[2]) == (100, "eo-try-?")


def test_yarn_settings_are_defaults_the_pipeline_can_override() -> None:
    tags = ["eo-pipeline-p", "eo-submission-x"]
    assert yarn_conf({"spark.speculation": "true"}, deploy_mode="cluster", tags=tags) == {
        "spark.speculation": "true",
        "spark.yarn.tags": "eo-pipeline-p,eo-submission-x",
        "spark.yarn.maxAppAttempts": "1",
        "spark.yarn.submit.waitAppCompletion": "false",
    }
    own = {"spark.yarn.maxAppAttempts": "2", "spark.yarn.tags": "team,cost-7"}
    assert yarn_conf(own, deploy_mode="client", tags=tags) == {
        "spark.yarn.maxAppAttempts": "2",
        "spark.yarn.tags": "team,cost-7,eo-pipeline-p,eo-submission-x",
    }


def test_container_sizes_follow_sparks_yarn_client() -> None:
    assert [size_mib(s) for s in ("512m", "1g", "2048", "3gb", "1t")] == [512, 1024, 2048, 3072, 1024 * 1024]
    assert size_mib("2147483648", default_unit="b") == 2048
    with pytest.raises(ValueError, match="not a Spark memory size"):
        size_mib("lots")
    assert driver_container({}, "cluster").memory_mb == 1024 + 384  # 1g, max(102, 384)
    assert driver_container({"spark.driver.memory": "8g", "spark.driver.cores": "2"}, "cluster") == (
        driver_container({"spark.driver.memory": "8192m", "spark.driver.cores": "2"}, "cluster")
    )
    eight = driver_container({"spark.driver.memory": "8g", "spark.driver.cores": "2"}, "cluster")
    assert (eight.memory_mb, eight.vcores, eight.sizing) == (8192 + 819, 2, "8192 MB + overhead 819 MB")
    assert driver_container({"spark.driver.memory": "8g"}, "client").memory_mb == 512 + 384  # the AM only
    executor = executor_container(
        {
            "spark.executor.memory": "4g",
            "spark.executor.memoryOverhead": "1g",
            "spark.executor.pyspark.memory": "512m",
            "spark.memory.offHeap.enabled": "true",
            "spark.memory.offHeap.size": str(256 * 1024 * 1024),
            "spark.executor.cores": "3",
        }
    )
    assert (executor.memory_mb, executor.vcores) == (4096 + 1024 + 512 + 256, 3)
    assert executor.sizing == "4096 MB + overhead 1024 MB + pyspark 512 MB + off-heap 256 MB"
    factor = executor_container(
        {"spark.executor.memory": "10g", "spark.executor.memoryOverheadFactor": "0.2"}
    )
    assert factor.memory_mb == 10240 + 2048


def test_the_queue_is_the_operators_then_the_connections_then_the_conf() -> None:
    from airflow.sdk import Connection

    conn = Connection(conn_id="s", conn_type="spark", host="yarn", extra='{"queue": "etl"}')
    assert submission_queue("adhoc", conn, {"spark.yarn.queue": "c"}) == "adhoc"
    assert submission_queue(None, conn, {"spark.yarn.queue": "c"}) == "etl"
    assert submission_queue(None, None, {"spark.yarn.queue": "c"}) == "c"
    assert submission_queue(None, None, {}) == "default"


NESTED = {
    "queueName": "root",
    "queuePath": "root",
    "maximumAllocation": {"memory": 8192, "vCores": 4},
    "queues": {
        "queue": [
            {"queueName": "default", "queuePath": "root.default", "maximumAllocation": {"memory": 8192}},
            {
                "queueName": "teams",
                "queuePath": "root.teams",
                "queues": {
                    "queue": [{"queueName": "etl", "maximumAllocation": {"memory": 2048, "vCores": 1}}]
                },
            },
            {"queueName": "etl", "queuePath": "root.etl"},
        ]
    },
}


def test_capacity_scheduler_queues_and_their_lookup() -> None:
    queues = list(capacity_queues(NESTED, None))
    assert queues == [
        YarnQueue("root", "root", False, 8192, 4),
        YarnQueue("root.default", "default", True, 8192, None),
        YarnQueue("root.teams", "teams", False, None, None),
        YarnQueue("root.teams.etl", "etl", True, 2048, 1),  # no queuePath given: made from the parents
        YarnQueue("root.etl", "etl", True, None, None),
    ]
    assert find_queue(queues, "default") == queues[1]
    assert find_queue(queues, "root.teams.etl") == queues[3]
    assert find_queue(queues, "etl") is None  # two leaves of that name: only the path says which
    assert find_queue(queues, "teams") is None and find_queue(queues, "root.teams") == queues[2]


def test_an_application_report_is_read_as_the_rm_gives_it() -> None:
    app = YarnApplication.from_json(
        {
            "id": "application_1_0006",
            "name": "eo-write-p",
            "queue": "root.default",
            "state": "FINISHED",
            "finalStatus": "SUCCEEDED",
            "diagnostics": "",
            "applicationTags": "eo-epoch-6,eo-pipeline-p,eo-try-1",
        }
    )
    assert (app.finished, app.succeeded, app.tags) == (
        True,
        True,
        ("eo-epoch-6", "eo-pipeline-p", "eo-try-1"),
    )
    running = YarnApplication.from_json({"id": "a", "state": "RUNNING", "applicationTags": ""})
    assert (running.finished, running.succeeded, running.final_status, running.tags) == (
        False,
        False,
        "UNDEFINED",
        (),
    )
    assert ResourceManager("rm:8088/", where="w").base_url == "http://rm:8088"
    assert ResourceManager("https://rm:8090", where="w").base_url == "https://rm:8090"


def test_a_killed_applications_staging_dir_is_where_spark_put_it() -> None:
    app = YarnApplication.from_json({"id": "application_1_0007", "state": "KILLED", "user": "etl"})
    assert staging_dir({"spark.yarn.stagingDir": "hdfs://nn/tmp/stage/"}, app) == (
        "hdfs://nn/tmp/stage/etl/.sparkStaging/application_1_0007"
    )
    assert staging_dir({}, app) == ".sparkStaging/application_1_0007"  # in the user's home, as Spark


def test_tracking_gives_up_on_a_resource_manager_that_stays_away(monkeypatch: pytest.MonkeyPatch) -> None:
    """Polls that fail are retried for RM_OUTAGE_S (shortened here), then the step fails
    naming the RM and its connection; nothing listens on the port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setattr(yarn_tracking, "RM_OUTAGE_S", 0.2)
    rm = ResourceManager(f"127.0.0.1:{port}", where="Spark connection 'spark_yarn'")
    tracking = yarn_tracking.YarnTracking(rm, "eo-submission-x", "pipeline p epoch 1", poll_s=0.05)
    with pytest.raises(
        ResourceManagerUnavailable, match=rf"127\.0\.0\.1:{port} \(Spark connection 'spark_yarn'\)"
    ):
        tracking.wait()
