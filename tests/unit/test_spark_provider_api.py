"""The operators use only the Spark provider's public API.

No module of ``airflow_provider_eo/operators/`` reads or writes a private (underscore)
attribute of ``SparkSubmitOperator`` / ``SparkSubmitHook``, overrides one of their private
methods, or imports a private name from the provider: a provider release may change all
of those without notice. Python has no static types here, so an attribute counts as the
provider's by name: every underscore name the installed provider's classes and their
instances have (their bases' included, so ``BaseOperator``'s too), plus those of provider
6.3 listed below, in case a later release renames them.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

OPERATORS = Path(__file__).resolve().parents[2] / "airflow_provider_eo" / "operators"
PROVIDER_MODULE = "airflow.providers.apache.spark"

#: Private names of provider 6.3 that the write operator once used or might be tempted to.
KNOWN_PRIVATE = frozenset(
    {
        "_get_hook", "_hook", "_backend", "_conn_id", "_archives", "_java_class", "_repositories",
        "_total_executor_cores", "_executor_cores", "_executor_memory", "_driver_memory",
        "_num_executors", "_status_poll_interval", "_verbose", "_spark_binary", "_yarn_queue",
        "_deploy_mode", "_use_krb5ccache", "_track_driver_via_k8s_api", "_yarn_track_via_rm_api",
        "_yarn_rm_auth", "_resolve_connection", "_connection", "_conf", "_env", "_env_vars",
        "_py_files", "_properties_file", "_build_spark_submit_command", "_submit_sp",
        "_is_yarn", "_is_kubernetes", "_is_yarn_cluster_mode", "_should_track_driver_status",
    }
)  # fmt: skip
#: Explicitly never defined in our operators, whatever the installed provider has.
FORBIDDEN_DEFINITIONS = frozenset({"_get_hook", "_resolve_connection"})


def _private(names: object) -> set[str]:
    return {n for n in names if isinstance(n, str) and n.startswith("_") and not n.startswith("__")}  # type: ignore[attr-defined]


@cache
def provider_private_names() -> frozenset[str]:
    """Underscore names of the provider's operator and hook classes and of instances of them."""
    names = _private(dir(SparkSubmitOperator)) | _private(dir(SparkSubmitHook))
    names |= _private(vars(SparkSubmitOperator(task_id="probe")))
    names |= _private(vars(SparkSubmitHook(conn_id="eo_no_such_spark_connection")))
    return frozenset(names | KNOWN_PRIVATE)


def violations(source: str, private: frozenset[str]) -> list[str]:
    """What in ``source`` uses a name of ``private`` (line: description)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in private:
            found.append(f"{node.lineno}: accesses .{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "setattr", "hasattr", "delattr"}
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in private
        ):
            found.append(f"{node.lineno}: {node.func.id}(..., {node.args[1].value!r})")
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name in private:
                    found.append(f"{item.lineno}: {node.name} overrides {item.name}")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in FORBIDDEN_DEFINITIONS:
            found.append(f"{node.lineno}: defines {node.name}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PROVIDER_MODULE):
            found += [
                f"{node.lineno}: imports {alias.name} from {node.module}"
                for alias in node.names
                if alias.name.startswith("_")
            ]
    return found


def test_operators_use_only_the_spark_providers_public_api() -> None:
    private = provider_private_names()
    found = {
        path.name: problems
        for path in sorted(OPERATORS.glob("*.py"))
        if (problems := violations(path.read_text(), private))
    }
    assert found == {}


def test_the_check_finds_what_the_write_operator_used_to_do() -> None:
    """The check is not vacuous: the old implementation's uses are all found."""
    source = """
from airflow.providers.apache.spark.hooks.spark_submit import _K8S_WAIT_APP_COMPLETION_CONF, SparkSubmitHook

class Hook(SparkSubmitHook):
    def _resolve_connection(self):
        return super()._resolve_connection()

class Op(SparkSubmitOperator):
    def _get_hook(self):
        return Hook(conn_id=self._conn_id, archives=self._archives)

    def execute(self, context):
        master = self._get_hook()._connection["master"]
        self._hook = None
        getattr(self, "_deploy_mode")

def _resolve_connection():
    pass
"""
    found = {problem.split(": ", 1)[1] for problem in violations(source, provider_private_names())}
    assert found == {
        "imports _K8S_WAIT_APP_COMPLETION_CONF from airflow.providers.apache.spark.hooks.spark_submit",
        "Hook overrides _resolve_connection",
        "Op overrides _get_hook",
        "defines _resolve_connection",
        "defines _get_hook",
        "accesses ._resolve_connection",
        "accesses ._conn_id",
        "accesses ._archives",
        "accesses ._connection",
        "accesses ._get_hook",
        "accesses ._hook",
        "getattr(..., '_deploy_mode')",
    }


def test_our_own_private_names_are_not_the_providers() -> None:
    """The write operator's own attributes and methods must not shadow the provider's
    private ones (it has no underscore attribute of its own today)."""
    from airflow_provider_eo.config import parse_pipelines_text
    from airflow_provider_eo.operators.write import WriteEpochOperator

    spec = parse_pipelines_text("pipelines:\n  - {name: p, topics: [t], hbase: {table: t}}\n", "p.yaml")["p"]
    op = WriteEpochOperator(task_id="probe_write", pipeline="p", epoch_id=1, spec=spec)
    own = (set(vars(op)) - set(vars(SparkSubmitOperator(task_id="probe")))) | (
        set(vars(WriteEpochOperator)) - set(vars(SparkSubmitOperator))
    )
    assert {"submit_hook", "hook_settings", "openlineage_options", "hook_arguments"} <= own
    assert own.isdisjoint(provider_private_names())
