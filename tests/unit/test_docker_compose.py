"""docker/: the compose stack's wiring, checked by reading it (no Docker engine runs here).

docker/docker-compose.yml is parsed with PyYAML (anchors and ``<<`` merges resolved as
compose resolves them) and checked against what its services need: pinned images, named
volumes where each service writes, secrets only from docker/.env (listed, empty, in
.env.example), a real healthcheck and a restart policy for every long-running service,
``depends_on`` conditions, Kafka's host listener, the HBase table init, the Schema
Registry's release, storage, compatibility and connection, no
architecture-specific paths, and passwords URL-encoded (airflow/eo_env.py, run for real).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import stat
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any
from xml.etree import ElementTree

import pytest
import yaml
from sqlalchemy.engine import make_url

from airflow_provider_eo.clients.connections import parse_connection
from airflow_provider_eo.config.loader import load_pipelines
from eo_devtools import docker_images

REPO = Path(__file__).resolve().parents[2]
DOCKER_DIR = REPO / "docker"
#: A version-shaped tag: 4.1.1, 15.10-bookworm, 17.0.13_11-jre-jammy, 3.3.2-python3.11.
PINNED_TAG = re.compile(r"^v?\d+\.\d+(?:\.\d+)*(?:[-_.][A-Za-z0-9_.-]+)?$")
#: Names of secret values (``*_FILE`` names a file holding one: a path, not a secret).
SECRET_NAME = re.compile(r"PASSWORD|SECRET|FERNET|_KEY$")
REFERENCE = re.compile(r"(?<!\$)\$\{(\w+)(?:(:?[-?])([^}]*))?\}")
UGLY_PASSWORD = "p@ss:w/rd%41#?&$x\"'\\ é+"


def compose() -> dict[str, Any]:
    return _parsed(DOCKER_DIR / "docker-compose.yml")


@cache
def _parsed(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


def services() -> dict[str, dict[str, Any]]:
    return dict(compose()["services"])


def is_secret(name: str) -> bool:
    return bool(SECRET_NAME.search(name)) and not name.endswith("_FILE")


def strings(node: object) -> list[str]:
    """Every string (keys and values) of a parsed YAML node; comments are gone by then."""
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in (*strings(k), *strings(v))]
    if isinstance(node, list):
        return [s for item in node for s in strings(item)]
    return [node] if isinstance(node, str) else []


def interpolate(value: object) -> str:
    """A compose value with each ``${VAR:-default}`` replaced by its default (``${VAR:?}``: ``<VAR>``)."""
    return REFERENCE.sub(lambda m: m.group(3) if m.group(2) in (":-", "-") else f"<{m.group(1)}>", str(value))


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {str(k): str(v) for k, v in env.items()}


def listener_map(value: str) -> list[tuple[str, str]]:
    """``A://h:1,B://:2`` -> ``[("A", "h:1"), ("B", ":2")]``."""
    return [(name, address) for name, address in (item.split("://") for item in value.split(","))]


def named_mounts(name: str, service: dict[str, Any]) -> dict[str, str]:
    """``{container path: volume}`` for the named volumes (not bind mounts) of a service."""
    mounts = {}
    for entry in service.get("volumes") or []:
        if isinstance(entry, dict):
            source, target = entry["source"], entry["target"]
        else:
            source, target = entry.split(":")[:2]
        if not source.startswith((".", "/", "~")):
            assert source in (compose().get("volumes") or {}), f"{name}: volume {source} is not declared"
            mounts[target] = source
    return mounts


def is_persisted(path: str, mounts: dict[str, str]) -> bool:
    return any(path == target or path.startswith(target.rstrip("/") + "/") for target in mounts)


def one_shots() -> set[str]:
    """Services others wait for to complete (init steps), not to be healthy."""
    conditions = [s["depends_on"] for s in services().values() if isinstance(s.get("depends_on"), dict)]
    return {dep for deps in conditions for dep, spec in deps.items()
            if (spec or {}).get("condition") == "service_completed_successfully"}  # fmt: skip


def airflow_components() -> list[str]:
    """Services of the Airflow image that run Airflow (not the Spark master and worker)."""
    return [n for n, s in services().items() if s["image"].startswith("eo-airflow:") and "spark" not in n]


def docker_file(name: str) -> str:
    return (DOCKER_DIR / name).read_text()


def load_script(relative: str) -> ModuleType:
    path = DOCKER_DIR / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pom_property(component: str, name: str) -> str:
    pom = ElementTree.parse(REPO / f"devtools/eo_devtools/stack/jvm/{component}/pom.xml")
    found = [e.text for e in pom.iter() if e.tag.endswith("}" + name) or e.tag == name]
    assert found and found[0], f"{component}/pom.xml has no {name}"
    return found[0]


def test_images_are_built_here_from_a_named_debian_base_and_pinned() -> None:
    """Nothing is pulled from a registry: every image is an ``eo-*`` image built from this
    repository, FROM a build argument whose default is the debootstrapped Debian base (or
    the eo-jvm image built from it), each tag pinned to a version."""
    images = {name: s["image"] for name, s in services().items()}
    for name, image in images.items():
        repository, _, tag = image.rpartition(":")
        assert repository.startswith("eo-") and PINNED_TAG.match(tag), f"{name}: image {image!r}"
        assert "build" in services()[name], f"{name}: {image} has no build section"
    built = dict(docker_images.IMAGES)
    assert set(images.values()) <= set(built), set(images.values()) - set(built)
    for tag, dockerfile in docker_images.IMAGES:
        text = docker_file(dockerfile)
        assert "# syntax=" not in text, f"{dockerfile}: a syntax line makes BuildKit pull its frontend"
        args = dict(re.findall(r"^ARG\s+(\w+)=(\S+)", text, flags=re.MULTILINE))
        bases = re.findall(r"^FROM\s+(\S+)", text, flags=re.MULTILINE)
        assert bases in (["${BASE_IMAGE}"], ["${JVM_IMAGE}"]), f"{dockerfile}: FROM {bases}"
        if bases == ["${BASE_IMAGE}"]:
            assert args["BASE_IMAGE"] == docker_images.DEFAULT_BASE, dockerfile
        else:
            assert args["JVM_IMAGE"] == docker_images.IMAGES[0][0], dockerfile
        assert PINNED_TAG.match(tag.rpartition(":")[2]), tag
    assert docker_images.IMAGES[0][1] == "Dockerfile.jvm"  # built before its users
    assert sorted(p.name for p in DOCKER_DIR.glob("Dockerfile*")) == sorted(built.values())
    # The same Kafka, HBase and Apicurio Registry releases as the local stack's.
    assert images["kafka"] == f"eo-kafka:{pom_property('kafka', 'kafka.version')}"
    hbase_release = pom_property("hbase", "hbase.release")
    assert images["hbase"] == f"eo-hbase:{hbase_release}"
    assert f"ARG HBASE_VERSION={hbase_release}\n" in docker_file("Dockerfile.hbase")
    assert images["airflow-scheduler"] == "eo-airflow:0.1.0"
    apicurio = pom_property("schema-registry", "apicurio.version")
    assert images["schema-registry"] == images["schema-registry-init"]
    assert images["schema-registry"] == f"eo-schema-registry:{apicurio}"


def test_every_service_writes_to_a_named_volume() -> None:
    svc = services()
    writes = {  # service -> where it writes its data
        "postgres": [environment(svc["postgres"]).get("PGDATA", "/var/lib/postgresql/data")],
        "redis": ["/data"],
        "kafka": environment(svc["kafka"]).get("KAFKA_LOG_DIRS", "<KAFKA_LOG_DIRS unset>").split(","),
    }
    site = ElementTree.parse(DOCKER_DIR / "hbase/hbase-site.xml").getroot()
    hbase_conf = {p.findtext("name"): p.findtext("value") or "" for p in site.iter("property")}
    assert "COPY docker/hbase/hbase-site.xml /opt/hbase/conf/" in docker_file("Dockerfile.hbase")
    writes["hbase"] = [hbase_conf["hbase.rootdir"].removeprefix("file://"),
                       hbase_conf["hbase.zookeeper.property.dataDir"]]  # fmt: skip
    for name in set(airflow_components()) - one_shots():
        writes[name] = ["/opt/airflow/logs"]  # task logs, read by the api-server from the same volume
    assert {"airflow-apiserver", "airflow-scheduler", "airflow-worker", "airflow-triggerer"} <= set(writes)
    for name, paths in writes.items():
        mounts = named_mounts(name, svc[name])
        for path in paths:
            assert is_persisted(path, mounts), f"{name} writes {path}, no named volume there ({mounts})"
    log_volumes = {named_mounts(n, svc[n])["/opt/airflow/logs"] for n in writes if n.startswith("airflow-")}
    assert len(log_volumes) == 1


def test_secrets_come_only_from_the_env_file() -> None:
    example = (DOCKER_DIR / ".env.example").read_text()
    listed = dict(re.findall(r"^(\w+)=(.*)$", example, flags=re.MULTILINE))
    optional = set(re.findall(r"^# (\w+)=", example, flags=re.MULTILINE))
    references = [ref for text in strings(compose()) for ref in REFERENCE.findall(text)]
    assert references
    for var, operator, _ in references:
        if is_secret(var):
            assert operator == ":?", f"secret ${{{var}}} must be required (:?), not defaulted"
            assert listed.get(var) == "", f"{var} must be listed with an empty value in .env.example"
        else:
            assert var in listed or var in optional, f"${{{var}}} is not documented in .env.example"
    for name, s in services().items():
        for key, value in environment(s).items():
            if is_secret(key) or key.startswith("AIRFLOW_CONN_"):
                literal = REFERENCE.sub("", value)
                assert not is_secret(key) or not literal, f"{name}: {key} has a literal secret"
                assert "password" not in literal.lower(), f"{name}: {key} embeds a password"
    ignored = subprocess.run(["git", "check-ignore", "-q", "docker/.env"], cwd=REPO, check=False)
    assert ignored.returncode == 0, "docker/.env must be ignored by git"


def test_long_running_services_have_real_healthchecks_and_restart() -> None:
    svc = services()
    inits = one_shots()
    assert inits == {"airflow-init", "hbase-init", "schema-registry-init"}
    expected_check = {
        "postgres": "pg_isready",
        "redis": "redis-cli ping",
        "kafka": "/dev/tcp/kafka/9092",  # the image has Kafka's server jars, not its CLI tools
        "hbase": "numRegionServers",
        "hbase-thrift": "/dev/tcp/127.0.0.1/9090",
        "airflow-apiserver": "/api/v2/monitor/health",
        "airflow-scheduler": ":8974/health",
        "airflow-dag-processor": "DagProcessorJob",
        "airflow-triggerer": "TriggererJob",
        "airflow-worker": "inspect ping",
        "spark-master": "ALIVE",
        "spark-worker": ":8081",
        "schema-registry": "/health/ready",
    }
    for name, s in svc.items():
        if name in inits:
            assert re.fullmatch(r"on-failure(:\d+)?", str(s.get("restart"))), f"{name}: one-shot restart"
            continue
        assert s.get("restart") in ("unless-stopped", "always"), f"{name}: no restart policy"
        test = (s.get("healthcheck") or {}).get("test")
        assert test and test[0] in ("CMD", "CMD-SHELL"), f"{name}: no healthcheck"
        assert expected_check[name] in " ".join(test), f"{name}: healthcheck {test}"


def test_depends_on_waits_for_healthy_or_completed_dependencies() -> None:
    svc = services()
    inits = one_shots()
    for name, s in svc.items():
        deps = s.get("depends_on") or {}
        assert isinstance(deps, dict), f"{name}: depends_on without conditions"
        for dep, spec in deps.items():
            want = "service_completed_successfully" if dep in inits else "service_healthy"
            assert dep in svc and spec.get("condition") == want, f"{name} -> {dep}: {spec}"
    for name in set(airflow_components()) - {"airflow-init"}:
        assert {"postgres", "redis", "airflow-init"} <= set(svc[name]["depends_on"]), name
    assert {"kafka", "hbase-thrift", "hbase-init", "spark-master", "schema-registry-init"} <= set(
        svc["airflow-worker"]["depends_on"]
    )
    assert "depends_on" not in svc["schema-registry"]  # in-memory storage: needs nothing
    assert set(svc["schema-registry-init"]["depends_on"]) == {"schema-registry"}
    assert set(svc["hbase-init"]["depends_on"]) == {"hbase"}


def test_kafka_has_an_internal_and_a_host_reachable_listener() -> None:
    svc = services()
    env = {k: interpolate(v) for k, v in environment(svc["kafka"]).items()}
    protocols = dict(item.split(":") for item in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    listeners = {name: address.rsplit(":", 1)[1] for name, address in listener_map(env["KAFKA_LISTENERS"])}
    advertised = dict(listener_map(env["KAFKA_ADVERTISED_LISTENERS"]))
    assert set(listeners) <= set(protocols) and set(advertised) <= set(listeners)
    ports = [interpolate(p).rsplit(":", 2) for p in svc["kafka"].get("ports", [])]
    published = {container: host for *_, host, container in ports}  # container port -> host port
    host_listeners = [n for n, a in advertised.items() if a.split(":")[0] == "localhost"]
    assert host_listeners, f"no listener advertised to the host: {advertised}"
    for listener in host_listeners:  # the advertised port is the published host port of that listener
        assert published.get(listeners[listener]) == advertised[listener].split(":")[1], (listener, published)
    kafka_conn = json.loads(environment(svc["airflow-worker"])["AIRFLOW_CONN_EO_KAFKA"])
    bootstrap = kafka_conn["extra"]["bootstrap.servers"]
    internal = [name for name, address in advertised.items() if address == bootstrap]
    assert internal == [env["KAFKA_INTER_BROKER_LISTENER_NAME"]], (bootstrap, advertised)
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["KAFKA_CONTROLLER_LISTENER_NAMES"] in listeners


def test_schema_registry_sets_backward_and_airflow_reaches_its_ccompat_api() -> None:
    svc = services()
    registry = environment(svc["schema-registry"])
    assert "KAFKA_BOOTSTRAP_SERVERS" not in registry  # in-memory storage, as the local stack
    assert registry["REGISTRY_RULES_GLOBAL_COMPATIBILITY"] == "BACKWARD"
    init = svc["schema-registry-init"]["entrypoint"]
    assert init[-1] == "http://schema-registry:8080/apis/ccompat/v7/config"
    assert json.loads(init[init.index("-d") + 1]) == {"compatibility": "BACKWARD"}
    assert init[init.index("-X") + 1] == "PUT"
    for name in set(airflow_components()) - {"airflow-init"}:
        assert json.loads(environment(svc[name])["AIRFLOW_CONN_SCHEMA_REGISTRY"]) == {
            "conn_type": "http",
            "host": "schema-registry",
            "port": 8080,
            "schema": "http",
            "extra": {"path": "/apis/ccompat/v7"},
        }, name


def test_hbase_init_creates_the_pipelines_tables_with_keep_deleted_cells() -> None:
    init = services()["hbase-init"]
    command = " ".join(init["command"])
    assert "hbase_tables.py /opt/eo/pipelines.yaml > /tmp/eo-tables.sh" in command
    assert "exec bash /tmp/eo-tables.sh" in command
    assert "../dags/pipelines.yaml:/opt/eo/pipelines.yaml:ro" in init["volumes"]
    assert "COPY docker/hbase/hbase_tables.py /opt/eo/hbase_tables.py" in docker_file("Dockerfile.hbase")
    assert "/HBaseTableTool.java /opt/eo/HBaseTableTool.java" in docker_file("Dockerfile.hbase")
    pipelines_file = REPO / "dags" / "pipelines.yaml"
    run = subprocess.run([sys.executable, str(DOCKER_DIR / "hbase/hbase_tables.py"), str(pipelines_file)],
                         capture_output=True, text=True, check=True)  # fmt: skip
    # HBaseTableTool create TABLE FAMILY KEEP_DELETED_CELLS MAX_VERSIONS, unless describe finds it
    assert run.stdout == (
        f"# Generated by hbase_tables.py from {pipelines_file}.\n"
        "set -e\n"
        "hbase-run.sh tool describe 'demo_events' > /dev/null 2>&1"
        " || hbase-run.sh tool create 'demo_events' 'd' true 3\n"
        "hbase-run.sh tool describe 'demo_orders' > /dev/null 2>&1"
        " || hbase-run.sh tool create 'demo_orders' 'd' true 3\n"
        "hbase-run.sh tool describe 'demo_customers' > /dev/null 2>&1"
        " || hbase-run.sh tool create 'demo_customers' 'd' true 3\n"
        "hbase-run.sh tool describe 'demo_events_session' > /dev/null 2>&1"
        " || hbase-run.sh tool create 'demo_events_session' 'd' true 3\n"
    )
    script = str(DOCKER_DIR / "hbase/hbase_tables.py")
    shell = subprocess.run([sys.executable, script, "--shell", str(pipelines_file)],
                           capture_output=True, text=True, check=True)  # fmt: skip
    assert shell.stdout == (
        f"# Generated by hbase_tables.py from {pipelines_file}.\n"
        "create 'demo_events', {NAME => 'd', KEEP_DELETED_CELLS => 'TRUE'} unless exists('demo_events')\n"
        "create 'demo_orders', {NAME => 'd', KEEP_DELETED_CELLS => 'TRUE'} unless exists('demo_orders')\n"
        "create 'demo_customers', {NAME => 'd', KEEP_DELETED_CELLS => 'TRUE'} "
        "unless exists('demo_customers')\n"
        "create 'demo_events_session', {NAME => 'd', KEEP_DELETED_CELLS => 'TRUE'} "
        "unless exists('demo_events_session')\n"
        "exit\n"
    )
    tables = load_script("hbase/hbase_tables.py").table_families(yaml.safe_load(pipelines_file.read_text()))
    pairs = {(table, family) for table, families in tables.items() for family in families}
    specs = load_pipelines(pipelines_file).values()  # agrees with the provider's own parser
    assert pairs == {(spec.hbase_table, spec.column_family) for spec in specs}


def test_hbase_tables_script_handles_namespaces_shared_tables_and_quotes() -> None:
    module = load_script("hbase/hbase_tables.py")
    pipelines = [
        {"hbase": {"table": "ns:t"}},
        {"hbase": {"table": "ns:t", "column_family": "it's"}},
        {"hbase": {"table": "u", "column_family": "d"}},
    ]
    assert module.shell_script(module.table_families({"pipelines": pipelines}), "p.yaml") == (
        "# Generated by hbase_tables.py from p.yaml.\n"
        f"namespaces = {module.EXISTING_NAMESPACES}\n"
        "create_namespace 'ns' unless namespaces.include?('ns')\n"
        "create 'ns:t', {NAME => 'd', KEEP_DELETED_CELLS => 'TRUE'},"
        " {NAME => 'it\\'s', KEEP_DELETED_CELLS => 'TRUE'} unless exists('ns:t')\n"
        "create 'u', {NAME => 'd', KEEP_DELETED_CELLS => 'TRUE'} unless exists('u')\n"
        "exit\n"
    )
    # the image's tool script: one family per table, no namespace; a quote survives bash
    with pytest.raises(ValueError, match="'ns:t'"):
        module.tool_script(module.table_families({"pipelines": pipelines}), "p.yaml")
    one = {"pipelines": [{"hbase": {"table": "it's", "column_family": "d"}}]}
    assert module.tool_script(module.table_families(one), "p.yaml").splitlines()[-1] == (
        "hbase-run.sh tool describe 'it'\\''s' > /dev/null 2>&1"
        " || hbase-run.sh tool create 'it'\\''s' 'd' true 3"
    )


def test_no_architecture_specific_paths() -> None:
    # docker/.build/ is staged at build time (jars, CA files) and ignored by git
    for path in sorted(p for p in DOCKER_DIR.rglob("*") if p.is_file() and ".build" not in p.parts):
        text = path.read_text(errors="replace")
        assert not re.search(r"amd64|arm64|x86_64|aarch64", text), f"{path.name} names an architecture"
    dockerfile = (DOCKER_DIR / "Dockerfile.airflow").read_text()
    assert "ENV JAVA_HOME=/usr/lib/jvm/default-java\n" in dockerfile and "default-jre-headless" in dockerfile


def test_airflow_secret_key_jwt_secret_and_admin_password_are_wired() -> None:
    svc = services()
    airflow = airflow_components()
    for name in airflow:
        env = environment(svc[name])
        assert env["AIRFLOW__API__SECRET_KEY"] == "${AIRFLOW_API_SECRET_KEY:?set it in docker/.env}", name
        assert env["AIRFLOW__API_AUTH__JWT_SECRET"] == "${AIRFLOW_JWT_SECRET:?set it in docker/.env}", name
        assert env["AIRFLOW__CORE__FERNET_KEY"] == "${AIRFLOW_FERNET_KEY:?set it in docker/.env}", name
        assert "entrypoint" not in svc[name], f"{name} must keep the image's eo_env.py entrypoint"
    api = environment(svc["airflow-apiserver"])
    assert api["AIRFLOW_ADMIN_PASSWORD"] == "${AIRFLOW_ADMIN_PASSWORD:?set it in docker/.env}"
    assert interpolate(api["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"]) == "admin:admin"
    assert [n for n in airflow if "AIRFLOW_ADMIN_PASSWORD" in environment(svc[n])] == ["airflow-apiserver"]
    assert re.search(r'^ENTRYPOINT \[.*"/opt/eo/eo_env.py", "/entrypoint"\]$',
                     (DOCKER_DIR / "Dockerfile.airflow").read_text(), flags=re.MULTILINE)  # fmt: skip


def test_no_password_is_pasted_into_a_uri() -> None:
    pasted = re.compile(r"://[^\s'\"@]*\$\{[^}]*\}[^\s'\"@]*@")  # scheme://user:${VAR}@host
    assert not [text for text in strings(compose()) if pasted.search(text)]


def test_eo_env_encodes_passwords_that_parse_back_exactly() -> None:
    eo_env = load_script("airflow/eo_env.py")
    raw = {"AIRFLOW_DB_PASSWORD": UGLY_PASSWORD, "EO_LEDGER_PASSWORD": UGLY_PASSWORD}
    settings = eo_env.derived_settings(raw)
    for key in ("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "AIRFLOW__CELERY__RESULT_BACKEND"):
        url = make_url(settings[key].removeprefix("db+"))
        assert (url.username, url.password, url.host, url.port, url.database) == (
            "airflow", UGLY_PASSWORD, "postgres", 5432, "airflow")  # fmt: skip
    ledger = parse_connection("eo_ledger", settings["AIRFLOW_CONN_EO_LEDGER"])
    assert (ledger.conn_type, ledger.login, ledger.password, ledger.host, ledger.port, ledger.schema) == (
        "postgres", "eo", UGLY_PASSWORD, "postgres", 5432, "eo")  # fmt: skip
    explicit = {"AIRFLOW_DB_PASSWORD": "x", "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "sqlite:///given"}
    assert "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN" not in eo_env.derived_settings(explicit)


def test_eo_env_runs_the_command_with_encoded_settings_and_no_raw_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    passwords = tmp_path / "passwords.json"
    env = {"PATH": os.environ["PATH"], "AIRFLOW_DB_PASSWORD": UGLY_PASSWORD, "EO_LEDGER_PASSWORD": "l",
           "AIRFLOW_ADMIN_PASSWORD": UGLY_PASSWORD, "AIRFLOW_ADMIN_USERNAME": "root",
           "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords)}  # fmt: skip
    show_env = [sys.executable, "-c", "import json, os; print(json.dumps(dict(os.environ)))"]
    run = subprocess.run([sys.executable, str(DOCKER_DIR / "airflow/eo_env.py"), *show_env],
                         env=env, capture_output=True, text=True, check=True)  # fmt: skip
    seen = json.loads(run.stdout)
    assert not {"AIRFLOW_DB_PASSWORD", "EO_LEDGER_PASSWORD", "AIRFLOW_ADMIN_PASSWORD"} & set(seen)
    assert make_url(seen["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]).password == UGLY_PASSWORD
    assert json.loads(seen["AIRFLOW_CONN_EO_LEDGER"])["password"] == "l"
    assert not [k for k, v in seen.items() if UGLY_PASSWORD in v] and UGLY_PASSWORD not in run.stderr
    assert stat.S_IMODE(passwords.stat().st_mode) == 0o600
    # Airflow's simple auth manager reads the file as the login's password.
    from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager

    monkeypatch.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE", str(passwords))
    assert SimpleAuthManager.get_passwords() == {"root": UGLY_PASSWORD}
