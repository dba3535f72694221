"""Protocol points: a no-op hook unless a handler is named; the fault suite's handler kills or hangs.

The handler cases run a real child process (the point SIGKILLs its caller).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from airflow_provider_eo import protocol_points
from tests.faults.crash_points import FAULT_HANG_ENV, FAULT_RELEASE_ENV, HANDLER_SPEC, crash_env

PACKAGE = Path(protocol_points.__file__).resolve().parent
CALL_RE = re.compile(r"protocol_points\.passed\(\"([^\"]+)\"\)")


@pytest.fixture
def recording_handler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A handler module (``eo_points_probe:record``) that appends each point's name to a file."""
    calls = tmp_path / "calls.txt"
    (tmp_path / "eo_points_probe.py").write_text(
        textwrap.dedent(f"""
            def record(name):
                with open({str(calls)!r}, "a") as out:
                    out.write(name + "\\n")
        """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return calls


def test_points_do_nothing_without_a_handler(
    recording_handler: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(protocol_points.HANDLER_ENV, raising=False)
    protocol_points.passed("commit.after_publish")
    protocol_points.passed("no.such.point")  # unchecked: the default path is one env lookup
    assert not recording_handler.exists()


def test_a_named_handler_is_called_with_each_point(
    recording_handler: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(protocol_points.HANDLER_ENV, "eo_points_probe:record")
    protocol_points.passed("reserve.in_transaction")
    protocol_points.passed("spark.after_vote")
    assert recording_handler.read_text() == "reserve.in_transaction\nspark.after_vote\n"
    with pytest.raises(ValueError, match=re.escape("unknown protocol point 'spark.after_voet'")):
        protocol_points.passed("spark.after_voet")


def test_a_malformed_handler_spec_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(protocol_points.HANDLER_ENV, "eo_points_probe.record")
    with pytest.raises(ValueError, match=re.escape("got 'eo_points_probe.record'")):
        protocol_points.passed("spark.after_vote")


def test_every_point_has_call_sites_and_every_call_names_a_point() -> None:
    called = {name for path in PACKAGE.rglob("*.py") for name in CALL_RE.findall(path.read_text())}
    assert called == set(protocol_points.POINT_NAMES)


def _run_point(point: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A child that passes ``point`` then prints ``survived``."""
    code = f"from airflow_provider_eo.protocol_points import passed; passed({point!r}); print('survived')"
    armed = ("EO_FAULT", protocol_points.HANDLER_ENV)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(armed)}
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
    assert env[protocol_points.HANDLER_ENV] == HANDLER_SPEC == "tests.faults.crash_points:handle"
    killed = _run_point("commit.after_publish", env)
    assert (killed.returncode, killed.stdout) == (-signal.SIGKILL, "")
    other = _run_point("commit.before_publish", env)
    assert (other.returncode, other.stdout) == (0, "survived\n")


def test_crash_handler_hangs_until_the_release_file(tmp_path: Path) -> None:
    release = tmp_path / "release"
    release.touch()  # already released: the point announces itself, then returns at once
    env = {**crash_env("spark.after_vote:hang"), FAULT_HANG_ENV: "600", FAULT_RELEASE_ENV: str(release)}
    hung = _run_point("spark.after_vote", env)
    assert (hung.returncode, hung.stdout) == (0, "survived\n")
    assert re.fullmatch(r"EO fault point spark\.after_vote: hanging \(pid \d+\)\n", hung.stderr)
