"""The planners (``airflow_provider_eo/ledger/planning/``) do no I/O: they import only the
standard library, the ledger's values (``ledger.model``), each other and the config's
specs; no public planner function takes the whole ``PipelineSpec`` (only the narrow
specs it uses) or something that reads Kafka or the ledger."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "airflow_provider_eo"
PLANNING = PACKAGE / "ledger" / "planning"
PLANNING_MODULE = "airflow_provider_eo.ledger.planning"
#: What a planner may import besides the standard library (a module or its submodules).
ALLOWED_PREFIXES = (
    "airflow_provider_eo.ledger.model",
    "airflow_provider_eo.ledger.planning",
    "airflow_provider_eo.config.specs",
)
#: Parameter types a public planner function must not take: the whole spec, and the
#: ports that read Kafka or the ledger.
FORBIDDEN_PARAMETER_TYPES = frozenset(
    {"PipelineSpec", "OffsetSource", "OffsetPublisher", "KafkaOffsets", "CursorSource", "Ledger"}
)


def _allowed(module: str) -> bool:
    root = module.split(".")[0]
    if root in sys.stdlib_module_names or root == "__future__":
        return True
    return any(module == prefix or module.startswith(prefix + ".") for prefix in ALLOWED_PREFIXES)


def _absolute(node: ast.ImportFrom, package: str) -> str:
    """The module an ``from ... import`` names, relative imports resolved against ``package``."""
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def forbidden_imports(source: str, package: str = PLANNING_MODULE) -> list[str]:
    """The modules ``source`` imports (at any depth: inside functions and ``if
    TYPE_CHECKING:`` too) that a planner may not, and dynamic imports (``__import__``,
    ``importlib.import_module``) as ``dynamic import``; module level first."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if not _allowed(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, package)
            if not _allowed(module):
                found.append(module)
            elif not node.module:  # "from . import x": each x is a module of the package
                found += [f"{module}.{a.name}" for a in node.names if not _allowed(f"{module}.{a.name}")]
        elif isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name in ("__import__", "importlib.import_module", "import_module"):
                found.append("dynamic import")
    return found


def forbidden_parameters(source: str) -> list[str]:
    """``function(parameter: Type)`` for each parameter of a public function (module level,
    or a public method of a public class) annotated with a forbidden type (anywhere in
    the annotation: ``PipelineSpec | None`` too)."""
    tree = ast.parse(source)
    functions: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions.append((node.name, node))
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            functions += [
                (f"{node.name}.{item.name}", item)
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            ]
    found = []
    for name, function in functions:
        if name.rsplit(".", 1)[-1].startswith("_") and not name.endswith("__init__"):
            continue
        args = function.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is None or arg.annotation is None:
                continue
            names = {n.id for n in ast.walk(arg.annotation) if isinstance(n, ast.Name)}
            names |= {n.attr for n in ast.walk(arg.annotation) if isinstance(n, ast.Attribute)}
            if isinstance(arg.annotation, ast.Constant) and isinstance(arg.annotation.value, str):
                names |= {n.id for n in ast.walk(ast.parse(arg.annotation.value)) if isinstance(n, ast.Name)}
            for bad in sorted(names & FORBIDDEN_PARAMETER_TYPES):
                found.append(f"{name}({arg.arg}: {bad})")
    return found


def planner_modules() -> list[Path]:
    return sorted(PLANNING.glob("*.py"))


def test_the_planning_package_is_where_the_check_looks() -> None:
    names = {path.stem for path in planner_modules()}
    assert {"backfill_plan", "stream_plan", "replay_plan", "seek_plan", "recovery_plan"} <= names


def test_planners_import_nothing_that_does_io() -> None:
    offenders = {
        path.name: found for path in planner_modules() if (found := forbidden_imports(path.read_text()))
    }
    assert offenders == {}


def test_no_public_planner_takes_the_whole_spec_or_a_reader() -> None:
    offenders = {
        path.name: found for path in planner_modules() if (found := forbidden_parameters(path.read_text()))
    }
    assert offenders == {}


def test_the_import_check_catches_an_offending_source() -> None:
    source = (
        "from __future__ import annotations\n"
        "import json\n"
        "from typing import TYPE_CHECKING\n"
        "from airflow_provider_eo.ledger.model.epoch import Epoch\n"
        "from airflow_provider_eo.config.specs import CapsSpec\n"
        "from . import fencing\n"
        "import confluent_kafka\n"
        "from airflow_provider_eo.hooks.kafka import EoKafkaHook\n"
        "from ..store import ledger\n"
        "from airflow_provider_eo.config import PipelineSpec\n"
        "if TYPE_CHECKING:\n"
        "    import psycopg2\n"
        "    from airflow.sdk import Context\n"
        "def plan():\n"
        "    from airflow_provider_eo.clients.kafka_watermarks import WatermarkReader\n"
        "    return importlib.import_module('airflow_provider_eo.ledger.store.postgres_ledger')\n"
    )
    assert forbidden_imports(source) == [
        "confluent_kafka",
        "airflow_provider_eo.hooks.kafka",
        "airflow_provider_eo.ledger.store",
        "airflow_provider_eo.config",
        "psycopg2",
        "airflow.sdk",
        "airflow_provider_eo.clients.kafka_watermarks",
        "dynamic import",
    ]


def test_the_parameter_check_catches_an_offending_source() -> None:
    source = (
        "def plan(spec: PipelineSpec, caps: CapsSpec) -> None: ...\n"
        "def read(kafka: 'OffsetSource', *, spec: specs.PipelineSpec | None = None) -> None: ...\n"
        "def _helper(spec: PipelineSpec) -> None: ...\n"
        "class Planner:\n"
        "    def __init__(self, spec: PipelineSpec) -> None: ...\n"
        "    def plan(self, ledger: Ledger) -> None: ...\n"
        "    def _private(self, spec: PipelineSpec) -> None: ...\n"
        "def fine(starting: StartingSpec, caps: CapsSpec, name: str) -> None: ...\n"
    )
    assert forbidden_parameters(source) == [
        "plan(spec: PipelineSpec)",
        "read(kafka: OffsetSource)",
        "read(spec: PipelineSpec)",
        "Planner.__init__(spec: PipelineSpec)",
        "Planner.plan(ledger: Ledger)",
    ]
