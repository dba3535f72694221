"""Protocol points: an audit event nobody listens to in production; the fault suite's hook
kills or hangs the process at an armed point.

The crash cases run a real child process (the point SIGKILLs its caller), armed the way the
fault suite arms spark-submit and Spark's workers: ``crash_env`` (``sitecustomize``).
"""

from __future__ import annotations

import ast
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_eo import protocol_points
from tests.faults.crash_points import FAULT_HANG_ENV, FAULT_RELEASE_ENV, POINTS_SITE, crash_env, listening

PACKAGE = Path(protocol_points.__file__).resolve().parent
CALL_RE = re.compile(r"protocol_points\.passed\(\"([^\"]+)\"\)")


def test_a_point_is_an_audit_event_and_unknown_names_are_refused() -> None:
    seen: list[str] = []
    protocol_points.passed("commit.after_publish")  # nobody listening: nothing happens
    with listening(seen.append):
        protocol_points.passed("reserve.in_transaction")
        protocol_points.passed("spark.after_vote")
    protocol_points.passed("commit.before_publish")  # no longer listening
    assert seen == ["reserve.in_transaction", "spark.after_vote"]
    with pytest.raises(ValueError, match=re.escape("unknown protocol point 'spark.after_voet'")):
        protocol_points.passed("spark.after_voet")


def test_the_product_imports_and_reads_nothing_for_its_points() -> None:
    tree = ast.parse(Path(protocol_points.__file__).read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {str(node.module) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported == {"__future__", "sys"}


def test_every_point_has_call_sites_and_every_call_names_a_point() -> None:
    called = {name for path in PACKAGE.rglob("*.py") for name in CALL_RE.findall(path.read_text())}
    assert called == set(protocol_points.POINT_NAMES)


def _run_point(point: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A child that passes ``point`` then prints ``survived``."""
    code = f"from airflow_provider_eo.protocol_points import passed; passed({point!r}); print('survived')"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("EO_FAULT") and k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, **env},
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_crash_handler_sigkills_the_process_at_an_armed_point() -> None:
    env = crash_env("reserve.after_insert,commit.after_publish")
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(POINTS_SITE)
    killed = _run_point("commit.after_publish", env)
    assert (killed.returncode, killed.stdout) == (-signal.SIGKILL, "")
    other = _run_point("commit.before_publish", env)
    assert (other.returncode, other.stdout) == (0, "survived\n")
    unarmed = _run_point("commit.after_publish", {"PYTHONPATH": env["PYTHONPATH"]})  # no EO_FAULT_POINTS
    assert (unarmed.returncode, unarmed.stdout) == (0, "survived\n")


def test_crash_handler_hangs_until_the_release_file(tmp_path: Path) -> None:
    release = tmp_path / "release"
    release.touch()  # already released: the point announces itself, then returns at once
    env = {**crash_env("spark.after_vote:hang"), FAULT_HANG_ENV: "600", FAULT_RELEASE_ENV: str(release)}
    hung = _run_point("spark.after_vote", env)
    assert (hung.returncode, hung.stdout) == (0, "survived\n")
    assert re.fullmatch(r"EO fault point spark\.after_vote: hanging \(pid \d+\)\n", hung.stderr)
