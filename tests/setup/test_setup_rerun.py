"""The setup command's promise (README, "Two commands"): on a machine it has set up, a second
``bash scripts/setup.sh`` installs nothing, reaches no package index, and changes nothing.

CI runs ``scripts/setup.sh`` first (``.ci/run`` → ``scripts/test.sh``), so here it runs a second
time on the same clone, with pip's index and every HTTP(S) proxy pointed at a closed port: an
install or a download would fail the run. Maven is asked nothing either: every JVM component
must answer ``cached``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STAMP = REPO / ".venv" / ".eo-install-stamp"
CLOSED = "http://127.0.0.1:9"
JVM_COMPONENTS = ("kafka", "hbase", "schema-registry", "spark-kafka", "yarn")


def _wanted_stamp() -> str:
    files = ("pyproject.toml", "devtools/pyproject.toml", "constraints.txt")
    return hashlib.sha256(b"".join((REPO / f).read_bytes() for f in files)).hexdigest()


def _venv_state() -> dict[str, float]:
    """What an install would touch: the stamp, pip's view of each distribution, the interpreter."""
    site = next((REPO / ".venv" / "lib").glob("python3*/site-packages"))
    watched = [STAMP, REPO / ".venv" / "bin" / "python", *sorted(site.glob("*.dist-info"))]
    return {str(p): p.stat().st_mtime for p in watched}


def test_a_second_setup_run_installs_nothing_needs_no_network_and_changes_nothing() -> None:
    assert STAMP.is_file() and STAMP.read_text().strip() == _wanted_stamp(), (
        f"{STAMP} is missing or older than pyproject.toml/constraints.txt: run scripts/setup.sh once, "
        "then this test (it checks the second run)"
    )
    before = _venv_state()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(
        PIP_INDEX_URL=f"{CLOSED}/simple",
        PIP_NO_INDEX="1",
        http_proxy=CLOSED,
        https_proxy=CLOSED,
        HTTP_PROXY=CLOSED,
        HTTPS_PROXY=CLOSED,
    )
    result = subprocess.run(
        ["bash", "scripts/setup.sh"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert not [line for line in lines if line.startswith(("setup: installing", "setup: creating"))], lines
    assert [line.split(":")[0] for line in lines if " jars in " in line] == list(JVM_COMPONENTS)
    assert all(": cached " in line for line in lines if " jars in " in line), lines
    assert lines[-1].startswith("setup: ready (.venv, pyspark==")
    assert _venv_state() == before
