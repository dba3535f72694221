"""What each distribution of the repository ships, by setuptools' own package discovery.

The provider's wheel (root ``pyproject.toml``) holds only ``airflow_provider_eo*``; the local
stack and the demo are the dev-only ``devtools/`` distribution, which owns ``eo-stack``.
(Offline, so no wheel is built here: the venv's setuptools is older than the build backend
pip uses; ``pip wheel --no-deps .`` gives the same package list.)
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from setuptools import find_namespace_packages, find_packages

REPO = Path(__file__).resolve().parents[2]


def _project(root: Path) -> dict[str, Any]:
    return tomllib.loads((root / "pyproject.toml").read_text())


def _packages(root: Path) -> list[str]:
    """The packages ``[tool.setuptools.packages.find]`` selects (as setuptools does for
    pyproject configuration: namespace discovery unless ``namespaces = false``)."""
    find = _project(root)["tool"]["setuptools"]["packages"]["find"]
    discover = find_namespace_packages if find.get("namespaces", True) else find_packages
    return sorted(discover(where=str(root), include=find["include"]))


def _modules(root: Path, packages: list[str]) -> set[str]:
    return {
        f"{package}.{path.stem}"
        for package in packages
        for path in (root / package.replace(".", "/")).glob("*.py")
    }


def test_provider_wheel_holds_only_the_provider() -> None:
    packages = _packages(REPO)
    assert packages and all(p.split(".")[0] == "airflow_provider_eo" for p in packages)
    shipped = {p.split(".")[1] for p in packages if "." in p}
    assert not shipped & {"devstack", "demo"}
    assert "airflow_provider_eo.faults" not in _modules(REPO, packages)
    assert "airflow_provider_eo.protocol_points" in _modules(REPO, packages)
    project = _project(REPO)
    assert project["project"]["scripts"] == {"eo-ledger": "airflow_provider_eo.cli.eo_ledger:main"}
    assert "pom.xml" not in str(project["tool"]["setuptools"]["package-data"])


def test_devtools_distribution_holds_the_stack_and_the_demo() -> None:
    root = REPO / "devtools"
    project = _project(root)
    assert project["project"]["name"] == "airflow-provider-eo-devtools"
    assert project["project"]["dependencies"] == [
        "airflow-provider-eo",
        "asyncpg>=0.30,<1",
        "apache-airflow-providers-celery>=3.26,<4",  # the stack's CeleryExecutor, never the provider's
        "PyJWT[crypto]>=2.10,<3",  # the stack's OAuth issuer (eo-stack up --tls)
    ]
    assert project["project"]["scripts"] == {"eo-stack": "eo_devtools.stack.cli:main"}
    packages = _packages(root)
    assert packages == [
        "eo_devtools",
        "eo_devtools.demo",
        "eo_devtools.stack",
        "eo_devtools.stack.hbase_admin",
    ]
    data = sorted(
        p.relative_to(root).as_posix()
        for package, globs in project["tool"]["setuptools"]["package-data"].items()
        for g in globs
        for p in (root / package.replace(".", "/")).glob(g)
        if p.is_file()
    )
    steps = "eo_devtools/stack/jvm/schema-registry/config-index-steps"
    java = f"{steps}/src/main/java/io/github/airflowprovidereo/devstack/registry"
    assert data == [
        "eo_devtools/stack/hbase_admin/HBaseTableTool.java",  # the demo's and the tests' Admin tool
        "eo_devtools/stack/hbase_admin/log4j.properties",
        "eo_devtools/stack/jvm/hbase/pom.xml",
        "eo_devtools/stack/jvm/kafka/pom.xml",
        f"{steps}/pom.xml",
        f"{java}/DynamicConfigIndexSteps.java",
        f"{java}/DynamicConfigListRecorder.java",
        f"{steps}/src/main/resources/META-INF/quarkus-build-steps.list",
        "eo_devtools/stack/jvm/schema-registry/pom.xml",
        "eo_devtools/stack/jvm/spark-kafka/pom.xml",  # Spark's Kafka connector (the benchmark's peers)
        "eo_devtools/stack/jvm/yarn/pom.xml",  # Apache Hadoop YARN (eo-stack up --yarn)
    ]
