"""A private Docker engine for building and running ``docker/``: Debian's ``docker.io``.

:class:`PrivateDockerd` starts ``dockerd`` in the background with its data root, exec root,
pid file and socket under one scratch directory (no systemd runs here), so it shares nothing
with another engine on the machine; :meth:`PrivateDockerd.stop` ends it by its pid and removes
what it leaves behind: the ``docker0`` bridge and its iptables chains. :func:`ensure_packages`
installs ``docker.io``, ``docker-compose`` (v1) and ``debootstrap`` with apt when one of
their programs is missing. Every command run against the engine gets ``DOCKER_HOST`` in its
environment (:meth:`PrivateDockerd.env`) and uses Debian's client, ``/usr/bin/docker``
(the first ``docker`` on PATH may be a newer build without the legacy builder).

Raises :class:`DockerEngineError` naming the step and the log when a step fails.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

DOCKER = "/usr/bin/docker"
COMPOSE = "/usr/bin/docker-compose"
DOCKERD = "/usr/sbin/dockerd"
DEBOOTSTRAP = "/usr/sbin/debootstrap"
PACKAGES = ("docker.io", "docker-compose", "debootstrap")
IPTABLES_CHAINS = ("DOCKER", "DOCKER-ISOLATION-STAGE-1", "DOCKER-ISOLATION-STAGE-2", "DOCKER-USER")


class DockerEngineError(RuntimeError):
    """A step of installing, starting or stopping the private engine failed."""


def ensure_packages() -> None:
    """Install Debian's docker.io, docker-compose and debootstrap unless all are installed;
    raises DockerEngineError with apt's output tail when apt fails."""
    if all(Path(p).exists() for p in (DOCKER, COMPOSE, DOCKERD, DEBOOTSTRAP)):
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update"], ["apt-get", "install", "-y", *PACKAGES]):
        run = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        if run.returncode != 0:
            raise DockerEngineError(f"{' '.join(argv)} failed ({run.returncode}): {run.stderr[-2000:]}")


class PrivateDockerd:
    """One ``dockerd`` whose state lives under ``scratch`` (``data/``, ``exec/``, ``docker.sock``,
    ``dockerd.pid``, ``dockerd.log``). Not thread-safe; one instance per scratch directory."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.socket = scratch / "docker.sock"
        self.pid_file = scratch / "dockerd.pid"
        self.log = scratch / "dockerd.log"
        self._process: subprocess.Popen[bytes] | None = None

    def env(self) -> dict[str, str]:
        """The environment for docker and docker-compose commands against this engine."""
        env = {**os.environ, "DOCKER_HOST": f"unix://{self.socket}", "DOCKER_BUILDKIT": "0"}
        env["COMPOSE_DOCKER_CLI_BUILD"] = "0"
        env["PATH"] = "/usr/bin:" + env.get("PATH", "")
        return env

    def answers(self) -> bool:
        """True when the engine answers ``docker info`` on its socket."""
        if not self.socket.exists():
            return False
        run = subprocess.run([DOCKER, "info"], env=self.env(), capture_output=True, check=False)
        return run.returncode == 0

    def start(self, timeout_s: float = 120.0) -> None:
        """Start dockerd unless it already answers on this socket; raises DockerEngineError
        with the log's tail when it exits or does not answer within ``timeout_s``."""
        if self.answers():
            return
        ensure_packages()
        self.scratch.mkdir(parents=True, exist_ok=True)
        argv = [
            DOCKERD,
            f"--data-root={self.scratch / 'data'}",
            f"--exec-root={self.scratch / 'exec'}",
            f"--pidfile={self.pid_file}",
            f"--host=unix://{self.socket}",
            "--storage-driver=overlay2",
        ]
        with self.log.open("ab") as log:
            self._process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise DockerEngineError(f"dockerd exited {self._process.returncode}: {self._log_tail()}")
            if self.answers():
                return
            time.sleep(1)
        raise DockerEngineError(
            f"dockerd did not answer on {self.socket} in {timeout_s:.0f} s: {self._log_tail()}"
        )

    def stop(self, timeout_s: float = 60.0) -> None:
        """SIGTERM dockerd by its pid (the pid file's), wait for it, then delete the docker0
        bridge and Docker's iptables chains and rules. A no-op when it does not run."""
        pid = int(self.pid_file.read_text().strip()) if self.pid_file.exists() else None
        if pid is not None:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pid = None
        deadline = time.monotonic() + timeout_s
        while pid is not None and time.monotonic() < deadline and _alive(pid):
            time.sleep(0.5)
        if pid is not None and _alive(pid):
            os.kill(pid, signal.SIGKILL)
        if self._process is not None:
            self._process.wait(timeout=10)
        clean_network()

    def _log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log.exists() else "(no log)"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie child counts as gone
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def clean_network() -> None:
    """Delete the docker0 bridge and Docker's iptables rules and chains (what dockerd leaves)."""
    ip = shutil.which("ip")
    if (
        ip
        and subprocess.run([ip, "link", "show", "docker0"], capture_output=True, check=False).returncode == 0
    ):
        subprocess.run([ip, "link", "delete", "docker0"], capture_output=True, check=False)
    iptables = shutil.which("iptables")
    if iptables is None:
        return
    for table in ("filter", "nat"):
        rules = subprocess.run(
            [iptables, "-t", table, "-S"], capture_output=True, text=True, check=False
        ).stdout
        for rule in rules.splitlines():
            if rule.startswith("-A ") and ("DOCKER" in rule or "docker0" in rule):
                subprocess.run(
                    [iptables, "-t", table, "-D", *rule.split()[1:]], capture_output=True, check=False
                )
        for chain in IPTABLES_CHAINS:
            subprocess.run([iptables, "-t", table, "-F", chain], capture_output=True, check=False)
            subprocess.run([iptables, "-t", table, "-X", chain], capture_output=True, check=False)
