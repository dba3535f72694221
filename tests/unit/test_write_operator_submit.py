"""WriteEpochOperator's spark-submit command line: the master (pipeline YAML over the
connection), resources, the package zip on non-local masters, secrets kept off it, and in
YARN cluster deploy mode the driver's environment file, the tags, the tracking through the
ResourceManager and ``on_kill`` by tag.

Every check runs the operator's public ``execute`` (and ``on_kill``) as Airflow does: the
Spark provider builds its hook and starts ``spark-submit`` from PATH, here a fake one
(``fake_spark``) that records its arguments, the environment it got, the properties
file, the ``--files`` and the ``--py-files`` zip, then exits; on a YARN master it
registers its application, with the tags it was given, at a stand-in ResourceManager
(``tests/resource_manager_stand_in.py``; the real one runs in
``tests/integration/test_yarn_cluster_mode.py``). Connections come from ``AIRFLOW_CONN_*``.
"""

from __future__ import annotations

import copy
import json
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowException

from airflow_provider_eo.clients.connections import env_var_name
from airflow_provider_eo.config import parse_pipelines_text
from airflow_provider_eo.config.loader import PIPELINE_SPEC_ENV
from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.operators.driver_start import DRIVER_JAVA_OPTIONS, WORKER_DAEMON
from airflow_provider_eo.operators.spark_submission import (
    connection_master,
    master_connection,
    master_connection_id,
)
from airflow_provider_eo.operators.write import WriteEpochOperator, spark_application_path
from airflow_provider_eo.operators.yarn_tracking import YarnApplicationFailed
from airflow_provider_eo.spark.driver.driver_environment import DRIVER_ENV_ARG, DRIVER_ENV_FILE
from tests.resource_manager_stand_in import StandInResourceManager, stand_in_resource_manager

LEDGER_SECRET = "s3cr3t-pw"

FAKE_SPARK_SUBMIT = """#!{python}
import json, os, stat, sys, time, urllib.request, zipfile

argv = sys.argv[1:]


def value(option):
    return argv[argv.index(option) + 1] if option in argv else None


def shipped(path):
    if not os.path.isfile(path):
        return None
    return {{"text": open(path).read(), "mode": oct(stat.S_IMODE(os.stat(path).st_mode))}}


properties = value("--properties-file")
py_files = [p for p in (value("--py-files") or "").split(",") if p]
files = [p for p in (value("--files") or "").split(",") if p]
confs = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--conf")
record = {{
    "binary": os.path.basename(sys.argv[0]),
    "argv": argv,
    "env": {{k: v for k, v in os.environ.items() if k.startswith(("AIRFLOW_CONN_", "{spec_env}"))}},
    "properties": open(properties).read() if properties else None,
    "py_files": {{p: zipfile.ZipFile(p).namelist() if p.endswith(".zip") else None for p in py_files}},
    "files": {{p: shipped(p) for p in files}},
}}
if os.environ.get("EO_FAKE_RM") and "spark.yarn.tags" in confs:  # YARN accepted the application
    succeeded = '{{"state": "FINISHED", "finalStatus": "SUCCEEDED"}}'
    report = json.loads(os.environ.get("EO_FAKE_RM_APP", succeeded))
    body = json.dumps({{"tags": confs["spark.yarn.tags"].split(","), **report}}).encode()
    urllib.request.urlopen(urllib.request.Request(os.environ["EO_FAKE_RM"] + "/stand-in/apps", body))
out = os.environ["EO_FAKE_SPARK_SUBMIT_OUT"]
with open(out + ".tmp", "w") as handle:
    json.dump(record, handle)
os.replace(out + ".tmp", out)
print("Exit code: 0", flush=True)  # what the hook reads on a Kubernetes master
time.sleep(float(os.environ.get("EO_FAKE_SPARK_SUBMIT_SLEEP", "0")))
sys.exit(int(os.environ.get("EO_FAKE_SPARK_SUBMIT_EXIT", "0")))
"""


@dataclass
class FakeSpark:
    """The fake ``spark-submit`` / ``spark3-submit`` on PATH and what its last run recorded."""

    out: Path

    def submitted(self) -> dict[str, Any]:
        return json.loads(self.out.read_text())

    def ran(self) -> bool:
        return self.out.exists()


@pytest.fixture
def fake_spark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSpark:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("spark-submit", "spark3-submit"):
        script = bin_dir / name
        script.write_text(FAKE_SPARK_SUBMIT.format(python=sys.executable, spec_env=PIPELINE_SPEC_ENV))
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "submitted.json"
    monkeypatch.setenv("EO_FAKE_SPARK_SUBMIT_OUT", str(out))
    return FakeSpark(out)


@pytest.fixture(autouse=True)
def archive_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The driver class archives of this test (``[eo] spark_class_archive_dir``)."""
    monkeypatch.setenv("AIRFLOW__EO__SPARK_CLASS_ARCHIVE_DIR", str(tmp_path / "archives"))
    return tmp_path / "archives"


@pytest.fixture(autouse=True)
def kubernetes_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stand in for the cncf-kubernetes provider, which the hook needs for any k8s master
    (submitting in client mode never calls it)."""
    monkeypatch.setattr(
        "airflow.providers.apache.spark.hooks.spark_submit.kube_client", SimpleNamespace(), raising=False
    )


@pytest.fixture(autouse=True)
def connections(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[*]"}))
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_CLUSTER", json.dumps({"conn_type": "spark", "host": "spark://conn-master:7077"})
    )
    monkeypatch.setenv("AIRFLOW_CONN_EO_LEDGER", f"postgresql://eo:{LEDGER_SECRET}@db:5432/eo")
    monkeypatch.setenv(
        "AIRFLOW_CONN_EO_KAFKA", json.dumps({"conn_type": "kafka", "extra": {"bootstrap.servers": "k:9092"}})
    )
    monkeypatch.setenv("AIRFLOW_CONN_EO_HBASE", json.dumps({"conn_type": "hbase", "host": "h", "port": 9090}))


@pytest.fixture
def rm(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInResourceManager]:
    """The stand-in RM, named by the ``spark_yarn`` connection (cluster deploy mode)."""
    with stand_in_resource_manager() as stand_in:
        extra = {"deploy-mode": "cluster", "yarn_resourcemanager_webapp_address": stand_in.url}
        monkeypatch.setenv(
            "AIRFLOW_CONN_SPARK_YARN", json.dumps({"conn_type": "spark", "host": "yarn", "extra": extra})
        )
        monkeypatch.setenv("EO_FAKE_RM", stand_in.url)
        yield stand_in


def yarn_cluster(conf: dict[str, Any] | None = None, **kwargs: Any) -> WriteEpochOperator:
    """A write on YARN in cluster deploy mode through ``spark_yarn`` (the stand-in RM)."""
    spark = {"master": "yarn", "deploy_mode": "cluster", "conf": conf or {}}
    return operator(spark, spark_conn_id="spark_yarn", **{"status_poll_interval": 0.05, **kwargs})


def operator(spark: dict[str, Any] | None = None, **kwargs: Any) -> WriteEpochOperator:
    text = json.dumps(
        {"pipelines": [{"name": "p", "topics": ["t"], "hbase": {"table": "t"}, "spark": spark or {}}]}
    )
    spec = parse_pipelines_text(text, "p.yaml")["p"]
    return WriteEpochOperator(task_id="write", pipeline="p", epoch_id=7, spec=spec, **kwargs)


def submit(op: WriteEpochOperator, fake_spark: FakeSpark) -> dict[str, Any]:
    """Run ``op.execute`` against the fake spark-submit; what it recorded."""
    op.execute({})
    return fake_spark.submitted()


def options(argv: list[str]) -> list[str]:
    """The spark-submit options: everything before the application file."""
    return argv[: argv.index(spark_application_path())]


def option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def confs(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == "--conf"]


# --- the master: the pipeline's spark.master over the connection's ---------------------------


@pytest.mark.parametrize(
    "master",
    ["spark://yaml-master:7077", "spark://m1:7077,m2:7077", "local[2]", "local[*]", "k8s://https://k8s:6443"],
)
def test_master_from_the_pipeline_overrides_the_connection(fake_spark: FakeSpark, master: str) -> None:
    argv = submit(operator({"master": master}, spark_conn_id="spark_cluster"), fake_spark)["argv"]
    assert options(argv)[:2] == ["--master", master]
    assert argv.count("--master") == 1


def test_master_from_the_connection_without_one_in_the_pipeline(fake_spark: FakeSpark) -> None:
    op = operator(spark_conn_id="spark_cluster")
    assert op.submit_conn_id == "spark_cluster"  # the connection itself, nothing derived
    assert options(submit(op, fake_spark)["argv"])[:2] == ["--master", "spark://conn-master:7077"]
    assert options(submit(operator(), fake_spark)["argv"])[:2] == ["--master", "local[*]"]


def test_master_from_the_pipeline_needs_no_connection(fake_spark: FakeSpark) -> None:
    op = operator({"master": "spark://yaml-master:7077"}, spark_conn_id="no_such_connection")
    assert options(submit(op, fake_spark)["argv"])[:2] == ["--master", "spark://yaml-master:7077"]


def test_the_override_keeps_the_connections_extra(
    fake_spark: FakeSpark, monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = {"spark-binary": "spark3-submit", "queue": "etl"}
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_TUNED", json.dumps({"conn_type": "spark", "host": "yarn", "extra": extra})
    )
    submitted = submit(operator({"master": "local[2]"}, spark_conn_id="spark_tuned"), fake_spark)
    assert submitted["binary"] == "spark3-submit"
    assert options(submitted["argv"])[:2] == ["--master", "local[2]"]
    assert option(submitted["argv"], "--queue") == "etl"


def test_the_derived_connection_exists_only_while_execute_runs(fake_spark: FakeSpark) -> None:
    op = operator({"master": "spark://yaml-master:7077"}, spark_conn_id="spark_cluster")
    name = env_var_name(op.submit_conn_id)
    assert op.submit_conn_id == master_connection_id("spark_cluster", "spark://yaml-master:7077")
    assert re.fullmatch(r"AIRFLOW_CONN_\w+", name)
    assert name not in os.environ  # building the operator sets nothing
    submitted = submit(op, fake_spark)
    assert json.loads(submitted["env"][name]) == {"conn_type": "spark", "host": "spark://yaml-master:7077"}
    assert name not in os.environ  # removed after the run


def test_the_derived_connection_is_removed_when_the_submission_fails(
    fake_spark: FakeSpark, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EO_FAKE_SPARK_SUBMIT_EXIT", "3")
    op = operator({"master": "spark://yaml-master:7077"})
    with pytest.raises(AirflowException, match="Error code is: 3"):
        op.execute({})
    assert env_var_name(op.submit_conn_id) in fake_spark.submitted()["env"]
    assert env_var_name(op.submit_conn_id) not in os.environ
    assert op.py_files is None  # the zip's temp dir is gone with it


# --- the master rule: ours is the hook's ------------------------------------------------------

CONNECTIONS = [
    {"conn_type": "spark", "host": "local[*]"},
    {"conn_type": "spark", "host": "yarn"},
    {"conn_type": "spark", "host": "spark://m:7077"},
    {"conn_type": "spark", "host": "spark://m1:7077,m2:7077"},
    {"conn_type": "spark", "host": "m", "port": 7077},
    {"conn_type": "spark", "host": "spark://m", "port": 7077},
    {"conn_type": "spark", "host": "k8s://https://k8s:6443"},
    "spark://m:7077",  # a URI: conn_type spark, host m, port 7077
    "k8s://https://k8s:6443",  # conn_type k8s, host https://k8s, port 6443
    "yarn://rm",
]


def hook_master(conn_id: str, fake_spark: FakeSpark) -> str:
    """The master the installed provider's hook puts on the spark-submit command line."""
    SparkSubmitHook(conn_id=conn_id).submit("app.py")
    return option(fake_spark.submitted()["argv"], "--master")


@pytest.mark.parametrize("definition", CONNECTIONS, ids=str)
def test_connection_master_is_the_hooks_master(
    fake_spark: FakeSpark, monkeypatch: pytest.MonkeyPatch, definition: str | dict[str, Any]
) -> None:
    value = definition if isinstance(definition, str) else json.dumps(definition)
    monkeypatch.setenv("AIRFLOW_CONN_EO_SPARK_RULE", value)
    assert connection_master(BaseHook.get_connection("eo_spark_rule")) == hook_master(
        "eo_spark_rule", fake_spark
    )


@pytest.mark.parametrize("definition", CONNECTIONS, ids=str)
@pytest.mark.parametrize(
    "master", ["local[3]", "yarn", "spark://o:7077", "spark://o1:7077,o2:7077", "k8s://https://o:6443"]
)
def test_a_derived_connection_gives_the_hook_exactly_the_override(
    fake_spark: FakeSpark, monkeypatch: pytest.MonkeyPatch, definition: str | dict[str, Any], master: str
) -> None:
    value = definition if isinstance(definition, str) else json.dumps(definition)
    monkeypatch.setenv("AIRFLOW_CONN_EO_SPARK_RULE", value)
    derived = master_connection("eo_spark_rule_x", BaseHook.get_connection("eo_spark_rule"), master)
    monkeypatch.setenv(env_var_name(derived.conn_id), derived.as_json())
    assert connection_master(derived) == master
    assert hook_master(derived.conn_id, fake_spark) == master


def test_no_connection_is_the_hooks_fallback(fake_spark: FakeSpark) -> None:
    assert connection_master(None) == hook_master("no_such_connection", fake_spark) == "yarn"


# --- resources ---------------------------------------------------------------------------------


def test_resources_are_spark_submit_options(fake_spark: FakeSpark, archive_dir: Path) -> None:
    resources = {
        "driver_memory": "1g",
        "driver_cores": 2,
        "executor_memory": "4g",
        "executor_cores": 2,
        "num_executors": 3,
    }
    op = operator({"master": "local[2]", "resources": resources, "conf": {"spark.speculation": False}})
    argv = options(submit(op, fake_spark)["argv"])
    java = next(a for a in argv if a.startswith("spark.driver.extraJavaOptions="))
    partial = java.rsplit("-XX:ArchiveClassesAtExit=", 1)[1]
    assert Path(partial).parent == archive_dir and partial.endswith(".partial")
    assert argv == [
        "--master", "local[2]",
        "--conf", "spark.ui.enabled=false",
        "--conf", f"spark.driver.extraJavaOptions={DRIVER_JAVA_OPTIONS} -XX:ArchiveClassesAtExit={partial}",
        "--conf", f"spark.python.daemon.module={WORKER_DAEMON}",
        "--conf", "spark.driver.cores=2",
        "--conf", "spark.speculation=false",
        "--num-executors", "3",
        "--executor-cores", "2",
        "--executor-memory", "4g",
        "--driver-memory", "1g",
        "--name", "eo-write-p",
        "--deploy-mode", "client",
    ]  # fmt: skip


def test_num_executors_on_standalone_is_total_executor_cores(fake_spark: FakeSpark) -> None:
    one_core = operator({"master": "spark://m:7077", "resources": {"num_executors": 2}})
    opts = options(submit(one_core, fake_spark)["argv"])
    assert opts[:2] == ["--master", "spark://m:7077"]
    assert opts[opts.index("--total-executor-cores") :] == [
        "--total-executor-cores", "2",
        "--executor-cores", "1",
        "--name", "eo-write-p",
        "--deploy-mode", "client",
    ]  # fmt: skip
    two_cores = operator({"master": "spark://m:7077", "resources": {"num_executors": 3, "executor_cores": 2}})
    opts = options(submit(two_cores, fake_spark)["argv"])
    assert option(opts, "--total-executor-cores") == "6"
    assert option(opts, "--executor-cores") == "2"
    assert "--num-executors" not in opts


# --- settings and secrets -----------------------------------------------------------------------


def test_client_mode_hands_the_connections_over_as_the_process_environment(fake_spark: FakeSpark) -> None:
    op = operator({"master": "spark://m:7077"}, fencing_token="42")
    ti = SimpleNamespace(dag_id="eo_stream__p", run_id="manual__1", task_id="write", try_number=2)
    op.execute({"ti": ti})  # the driver votes as this task instance
    submitted = fake_spark.submitted()
    assert LEDGER_SECRET not in " ".join(submitted["argv"])
    assert submitted["argv"][-11:] == [
        spark_application_path(), "--pipeline", "p", "--epoch-id", "7", "--fencing-token", "42",
        "--actor-kind", "task", "--actor", "eo_stream__p/manual__1/write try 2",
    ]  # fmt: skip
    assert LEDGER_SECRET in submitted["env"]["AIRFLOW_CONN_EO_LEDGER"]
    assert json.loads(submitted["env"][PIPELINE_SPEC_ENV])["name"] == "p"
    assert op.env_vars is None and PIPELINE_SPEC_ENV not in os.environ  # only while it ran


def test_yarn_cluster_mode_ships_the_driver_environment_as_a_private_file(
    fake_spark: FakeSpark, rm: StandInResourceManager
) -> None:
    op = yarn_cluster({"spark.speculation": True}, files="/opt/lookup.csv")
    ti = SimpleNamespace(dag_id="eo_stream__p", run_id="manual__1", task_id="write", try_number=3)
    op.execute({"ti": ti})
    submitted = fake_spark.submitted()
    argv = submitted["argv"]
    assert LEDGER_SECRET not in " ".join(argv) and submitted["properties"] is None
    assert not [a for a in argv if "appMasterEnv" in a or "driverEnv" in a or "executorEnv" in a]
    assert option(argv, "--deploy-mode") == "cluster"
    extra, env_file = option(argv, "--files").split(",")
    assert (extra, Path(env_file).name) == ("/opt/lookup.csv", DRIVER_ENV_FILE)
    shipped = submitted["files"][env_file]
    assert shipped["mode"] == "0o600"
    assert json.loads(json.loads(shipped["text"])["AIRFLOW_CONN_EO_LEDGER"])["password"] == LEDGER_SECRET
    assert json.loads(json.loads(shipped["text"])[PIPELINE_SPEC_ENV])["name"] == "p"
    assert argv[-2:] == [DRIVER_ENV_ARG, DRIVER_ENV_FILE]  # its base name, never its content
    assert not Path(env_file).parent.exists()  # deleted after the run
    assert PIPELINE_SPEC_ENV not in submitted["env"]  # the operator set nothing in spark-submit's environment
    conf = dict(c.split("=", 1) for c in confs(argv))
    (app,) = rm.apps
    assert app["applicationTags"].split(",") == sorted(conf["spark.yarn.tags"].split(","))
    assert conf["spark.yarn.tags"].split(",")[:3] == ["eo-pipeline-p", "eo-epoch-7", "eo-try-3"]
    assert conf["spark.yarn.tags"].split(",")[3] == op.yarn_tracking.tag  # type: ignore[union-attr]
    assert (conf["spark.yarn.maxAppAttempts"], conf["spark.yarn.submit.waitAppCompletion"]) == ("1", "false")
    assert conf["spark.speculation"] == "true"
    assert op.yarn_tracking is not None and op.yarn_tracking.application is not None
    assert (op.yarn_tracking.application.state, op.yarn_tracking.application.final_status) == (
        "FINISHED", "SUCCEEDED"
    )  # fmt: skip


def test_the_pipelines_own_yarn_settings_are_kept(fake_spark: FakeSpark, rm: StandInResourceManager) -> None:
    own = {
        "spark.yarn.maxAppAttempts": 2,
        "spark.yarn.tags": "team-a",
        "spark.yarn.submit.waitAppCompletion": True,
    }
    conf = dict(c.split("=", 1) for c in confs(submit(yarn_cluster(own), fake_spark)["argv"]))
    assert (conf["spark.yarn.maxAppAttempts"], conf["spark.yarn.submit.waitAppCompletion"]) == ("2", "true")
    assert conf["spark.yarn.tags"].split(",")[:2] == ["team-a", "eo-pipeline-p"]


def test_yarn_client_mode_gets_the_tags_and_one_attempt_but_no_file(
    fake_spark: FakeSpark, rm: StandInResourceManager
) -> None:
    submitted = submit(
        operator({"master": "yarn"}, spark_conn_id="spark_yarn"),
        fake_spark,  # client: the default
    )
    conf = dict(c.split("=", 1) for c in confs(submitted["argv"]))
    assert conf["spark.yarn.maxAppAttempts"] == "1" and "spark.yarn.submit.waitAppCompletion" not in conf
    assert "--files" not in submitted["argv"] and DRIVER_ENV_ARG not in submitted["argv"]
    assert LEDGER_SECRET in submitted["env"]["AIRFLOW_CONN_EO_LEDGER"]


def test_the_step_fails_with_the_applications_final_status_and_diagnostics(
    fake_spark: FakeSpark, rm: StandInResourceManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = {
        "state": "FINISHED",
        "finalStatus": "FAILED",
        "diagnostics": "User application exited with status 3",
    }
    monkeypatch.setenv("EO_FAKE_RM_APP", json.dumps(report))
    with pytest.raises(YarnApplicationFailed) as info:
        yarn_cluster().execute({})
    assert str(info.value) == (
        "pipeline p epoch 7: YARN application application_1_0001 ended FINISHED with final status FAILED "
        f"(ResourceManager {rm.url}, Spark connection 'spark_yarn'); "
        "diagnostics: User application exited with status 3"
    )


def test_on_kill_kills_the_yarn_application_by_its_tag_after_spark_submit_returned(
    fake_spark: FakeSpark, rm: StandInResourceManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EO_FAKE_RM_APP", json.dumps({"state": "RUNNING", "finalStatus": "UNDEFINED"}))
    op = yarn_cluster()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            op.execute({})
        except BaseException as error:
            failure.append(error)

    runner = threading.Thread(target=run)
    runner.start()
    started = time.monotonic()
    while (
        not (rm.apps and op.yarn_tracking and op.yarn_tracking.application)
        and time.monotonic() - started < 30
    ):
        time.sleep(0.05)
    op.on_kill()  # spark-submit has exited: only the RM can reach the application
    runner.join(30)
    assert not runner.is_alive()
    assert rm.kills == ["application_1_0001"] and rm.apps[0]["state"] == "KILLED"
    assert len(failure) == 1 and isinstance(failure[0], YarnApplicationFailed)
    assert "application_1_0001 ended KILLED with final status KILLED" in str(failure[0])


def test_kubernetes_cluster_mode_is_refused_before_anything_runs(
    fake_spark: FakeSpark, monkeypatch: pytest.MonkeyPatch
) -> None:
    k8s = {"conn_type": "spark", "host": "k8s://https://k:6443", "extra": {"deploy-mode": "cluster"}}
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_K8S", json.dumps(k8s))
    op = operator({"deploy_mode": "cluster"}, spark_conn_id="spark_k8s")
    with pytest.raises(ConfigError, match="driver's connections would be written into the driver pod's spec"):
        op.execute({})
    assert not fake_spark.ran()


def test_yarn_cluster_mode_without_the_rm_address_is_refused(
    fake_spark: FakeSpark, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_YARN", json.dumps({"conn_type": "spark", "host": "yarn"}))
    with pytest.raises(
        ConfigError, match=r"set yarn_resourcemanager_webapp_address .* Spark connection 'spark_yarn'"
    ):
        yarn_cluster().execute({})
    assert not fake_spark.ran()


def test_yarn_track_via_rm_api_is_accepted_in_yarn_cluster_mode_only(
    fake_spark: FakeSpark, rm: StandInResourceManager
) -> None:
    op = yarn_cluster(yarn_track_via_rm_api=True)
    assert "yarn_track_via_rm_api" not in op.hook_settings  # the write step tracks; the hook does not
    op.execute({})
    assert op.yarn_tracking is not None and op.yarn_tracking.application is not None
    with pytest.raises(
        ConfigError, match="yarn_track_via_rm_api=True needs master yarn and deploy_mode 'cluster'"
    ):
        operator({"master": "spark://m:7077"}, yarn_track_via_rm_api=True).execute({})


def test_an_installed_package_ships_no_zip(fake_spark: FakeSpark) -> None:
    submitted = submit(operator({"master": "spark://m:7077", "package": "installed"}), fake_spark)
    assert "--py-files" not in submitted["argv"]


@pytest.mark.parametrize("master", ["yarn", "k8s://https://k:6443", "spark://m:7077", "local[2]"])
def test_client_mode_keeps_secrets_off_the_command_line(fake_spark: FakeSpark, master: str) -> None:
    """The provider turns ``env_vars`` into ``--conf spark.yarn.appMasterEnv.*`` arguments on
    YARN and Kubernetes; the operator hands the driver its environment through the process."""
    submitted = submit(operator({"master": master}), fake_spark)
    assert LEDGER_SECRET not in " ".join(submitted["argv"])
    assert LEDGER_SECRET in submitted["env"]["AIRFLOW_CONN_EO_LEDGER"]
    assert PIPELINE_SPEC_ENV not in os.environ  # restored after the run


# --- the package zip ----------------------------------------------------------------------------


def test_package_zip_is_shipped_to_a_cluster(fake_spark: FakeSpark) -> None:
    op = operator({"master": "spark://m:7077"}, py_files="local:/opt/extra.py")
    submitted = submit(op, fake_spark)
    extra, package = option(submitted["argv"], "--py-files").split(",")
    assert extra == "local:/opt/extra.py"
    assert "airflow_provider_eo/spark/task/write_task.py" in submitted["py_files"][package]
    assert op.py_files == "local:/opt/extra.py"  # restored after the run
    assert not Path(package).exists()  # the temp zip is removed


def test_package_zip_follows_a_non_local_connection_master(fake_spark: FakeSpark) -> None:
    submitted = submit(operator(spark_conn_id="spark_cluster"), fake_spark)
    (package,) = option(submitted["argv"], "--py-files").split(",")
    assert package.endswith("airflow_provider_eo.zip")


def test_local_master_ships_no_zip(fake_spark: FakeSpark) -> None:
    op = operator()
    assert "--py-files" not in submit(op, fake_spark)["argv"]
    assert op.py_files is None


def test_cluster_mode_on_a_standalone_connection_is_refused(fake_spark: FakeSpark) -> None:
    op = operator({"deploy_mode": "cluster"}, spark_conn_id="spark_cluster")
    with pytest.raises(
        ConfigError, match="pipeline p: deploy_mode 'cluster' with master 'spark://conn-master:7077'"
    ):
        op.execute({})
    assert not fake_spark.ran()


# --- the submission: a hook per execute, the operator left as constructed ---------------------

SUBMISSION_ATTRIBUTES = ("conf", "py_files", "properties_file", "application_args", "env_vars")


def attributes(op: WriteEpochOperator) -> dict[str, Any]:
    return {name: copy.deepcopy(getattr(op, name)) for name in SUBMISSION_ATTRIBUTES}


def test_execute_leaves_the_operator_as_constructed_in_client_mode(
    fake_spark: FakeSpark, archive_dir: Path
) -> None:
    op = operator(
        {"master": "spark://m:7077", "conf": {"spark.speculation": True}}, py_files="local:/opt/extra.py"
    )
    before = attributes(op)
    assert before == {
        "conf": {"spark.speculation": "true"},
        "py_files": "local:/opt/extra.py",
        "properties_file": None,
        "application_args": ["--pipeline", "p", "--epoch-id", "7"],
        "env_vars": None,
    }
    ti = SimpleNamespace(dag_id="eo_stream__p", run_id="manual__1", task_id="write", try_number=1)
    op.execute({"ti": ti})
    assert attributes(op) == before
    assert op.submit_hook is not None  # the hook that ran spark-submit, kept for on_kill
    argv = fake_spark.submitted()["argv"]
    extra, package = option(argv, "--py-files").split(",")
    assert (extra, Path(package).name) == ("local:/opt/extra.py", "airflow_provider_eo.zip")
    java = next(c for c in confs(argv) if c.startswith("spark.driver.extraJavaOptions="))
    partial = java.rsplit("-XX:ArchiveClassesAtExit=", 1)[1]
    assert Path(partial).parent == archive_dir and partial.endswith(".partial")
    assert confs(argv) == [
        "spark.ui.enabled=false",
        f"spark.driver.extraJavaOptions={DRIVER_JAVA_OPTIONS} -XX:ArchiveClassesAtExit={partial}",
        "spark.speculation=true",
    ]
    assert "--properties-file" not in argv
    assert argv[argv.index(spark_application_path()) :] == [
        spark_application_path(), "--pipeline", "p", "--epoch-id", "7",
        "--actor-kind", "task", "--actor", "eo_stream__p/manual__1/write try 1",
    ]  # fmt: skip


def test_execute_leaves_the_operator_as_constructed_in_cluster_mode(
    fake_spark: FakeSpark, rm: StandInResourceManager
) -> None:
    op = yarn_cluster({"spark.speculation": True}, fencing_token="9", py_files="local:/opt/extra.py")
    before = attributes(op)
    submitted = submit(op, fake_spark)
    assert attributes(op) == before
    argv = submitted["argv"]
    assert confs(argv)[:2] == ["spark.ui.enabled=false", "spark.speculation=true"]
    assert "--properties-file" not in argv
    assert option(argv, "--py-files").split(",")[0] == "local:/opt/extra.py"
    assert argv[argv.index(spark_application_path()) + 1 :][:6] == [
        "--pipeline", "p", "--epoch-id", "7", "--fencing-token", "9",
    ]  # fmt: skip


def test_an_instance_executes_again_with_the_same_submission(fake_spark: FakeSpark) -> None:
    """Nothing of one execute leaks into the next: the second submission is the first's."""
    op = operator({"master": "local[2]"}, fencing_token="5")
    first = submit(op, fake_spark)
    first_hook = op.submit_hook
    second = submit(op, fake_spark)
    assert op.submit_hook is not first_hook  # each execute builds its own hook

    def without_archive(argv: list[str]) -> list[str]:  # the first run records it, the second maps it
        return [a.split(" -XX:", 1)[0] if a.startswith("spark.driver.extraJavaOptions=") else a for a in argv]

    assert without_archive(second["argv"]) == without_archive(first["argv"])
    assert second["env"] == first["env"]


def test_kubernetes_detached_tracking_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^track_driver_via_k8s_api: the write step waits for spark-submit"):
        operator({"master": "k8s://https://k:6443"}, track_driver_via_k8s_api=True)


# --- on_kill ------------------------------------------------------------------------------------


@pytest.fixture
def slow_spark(fake_spark: FakeSpark, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSpark]:
    monkeypatch.setenv("EO_FAKE_SPARK_SUBMIT_SLEEP", "60")
    yield fake_spark


def test_on_kill_stops_the_running_spark_submit(slow_spark: FakeSpark) -> None:
    op = operator({"master": "local[2]"}, spark_conn_id="spark_cluster")
    failure: list[BaseException] = []

    def run() -> None:
        try:
            op.execute({})
        except BaseException as error:
            failure.append(error)

    started = time.monotonic()
    runner = threading.Thread(target=run)
    runner.start()
    while not slow_spark.ran() and time.monotonic() - started < 30:
        time.sleep(0.05)
    assert slow_spark.ran()
    op.on_kill()
    runner.join(30)
    assert not runner.is_alive()
    assert time.monotonic() - started < 30  # killed, not slept out
    assert len(failure) == 1 and isinstance(failure[0], AirflowException)
    assert "Error code is: -9" in str(failure[0])
    assert env_var_name(op.submit_conn_id) not in os.environ
