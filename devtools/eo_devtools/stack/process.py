"""Background service processes: start with a log and pid file, wait until healthy, stop.

Every service starts in its own session (``start_new_session=True``), so its process
group id equals its pid and stopping signals the whole group: no orphans are left,
even for services that fork workers (PostgreSQL).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

_children: dict[int, subprocess.Popen[bytes]] = {}
"""Processes started by this Python process, kept so they can be reaped (no zombies)."""


class ServiceStartError(RuntimeError):
    """A service could not be started or did not become healthy in time."""


def log_tail(log_path: Path, lines: int = 30) -> str:
    """Return the last ``lines`` lines of ``log_path`` ('' when it does not exist)."""
    try:
        text = log_path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def start_process(
    argv: Sequence[str],
    *,
    log_path: Path,
    pid_path: Path,
    env: Mapping[str, str],
    cwd: Path,
    user: str | None = None,
) -> int:
    """Start ``argv`` detached in its own session; stdout+stderr append to ``log_path``.

    Writes the pid to ``pid_path`` and returns it. ``user`` runs the process as that OS
    user (only possible when this process is root).
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
            user=user,
        )
    _children[proc.pid] = proc
    pid_path.write_text(f"{proc.pid}\n")
    return proc.pid


def read_pid(pid_path: Path) -> int | None:
    """Return the pid stored in ``pid_path`` or None when the file is missing or empty."""
    try:
        text = pid_path.read_text().strip()
    except FileNotFoundError:
        return None
    return int(text) if text else None


def _reap(pid: int) -> None:
    proc = _children.get(pid)
    if proc is not None and proc.poll() is not None:
        del _children[pid]


def is_running(pid: int) -> bool:
    """True when ``pid`` exists and is not a zombie."""
    _reap(pid)
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def running_pid(pid_path: Path) -> int | None:
    """The pid stored in ``pid_path`` when that process is running, else None."""
    pid = read_pid(pid_path)
    return pid if pid is not None and is_running(pid) else None


def _members(field: int, value: int) -> list[int]:
    """Pids of live (non-zombie) processes whose ``/proc/<pid>/stat`` field ``field``
    (counted after the state: 2 = process group, 3 = session) is ``value``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[field]) == value and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members


def group_members(pgid: int) -> list[int]:
    """Pids of live (non-zombie) processes whose process group is ``pgid``."""
    return _members(2, pgid)


def session_members(sid: int) -> list[int]:
    """Pids of live (non-zombie) processes whose session is ``sid``.

    A service starts in a session of its own (:func:`start_process`), and what it starts
    stays in that session even in a process group of its own (Airflow's task processes),
    unless it calls ``setsid``. The kernel does not hand out a pid while a live process
    still uses it as its session id, so once the leader ``sid`` is dead, every member
    found is a leftover of that leader.
    """
    return _members(3, sid)


def has_env(pid: int, name: str, value: str) -> bool:
    """True when ``pid``'s environment (as the kernel shows it) holds ``name=value``.

    False for a process that renamed itself: ``setproctitle`` overwrites the environment's
    memory (Airflow's LocalExecutor workers and task processes do)."""
    try:
        return f"{name}={value}".encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False


def cmdline(pid: int) -> str:
    """``pid``'s command line, arguments joined by spaces ('' when it is gone)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def processes_with_env(name: str, value: str) -> list[int]:
    """Pids of live processes (this one excepted) whose environment holds ``name=value``.

    Finds what a service started in a process group of its own (Airflow runs each task in
    one) after the service itself is gone: the environment is inherited, the group is not.
    """
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        if has_env(int(entry.name), name, value) and is_running(int(entry.name)):
            found.append(int(entry.name))
    return found


def processes_under(path: Path) -> list[int]:
    """Pids of live processes (this one excepted) whose command line names something under
    ``path`` or whose working directory lies under it: the processes of a state dir."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if (str(path) in command or cwd.startswith(str(path))) and is_running(int(entry.name)):
            found.append(int(entry.name))
    return found


def kill_with_groups(pids: list[int], timeout_s: float = 30.0) -> None:
    """SIGKILL ``pids`` and their process groups (never this process's own group); wait (at
    most ``timeout_s``) until none of them and no member of those groups is alive.

    The groups matter: a process that renamed itself (``setproctitle`` overwrites the
    environment it was found by) still shares the group of the processes that were found.
    """
    own_group = os.getpgid(0)
    groups: set[int] = set()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            group = os.getpgid(pid)
            if group != own_group:
                groups.add(group)
                os.killpg(group, signal.SIGKILL)
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not any(is_running(pid) for pid in pids) and not any(group_members(g) for g in groups):
            return
        time.sleep(0.05)


def kill_state_dir(state_dir: Path) -> None:
    """SIGKILL, with no grace, every process of the services started in ``state_dir``: those
    its ``pids/*.pid`` files name, with their process groups, and every process under it
    (:func:`processes_under`); returns when none is left (:func:`kill_with_groups`).

    For a throwaway state dir deleted next (a test session's stack): nothing is flushed or
    deregistered, so the state is not meant to be started again."""
    recorded = [running_pid(path) for path in sorted((state_dir / "pids").glob("*.pid"))]
    kill_with_groups([pid for pid in recorded if pid is not None] + processes_under(state_dir))


def group_rss_mb(pgid: int) -> float:
    """Resident memory (MiB) of every live process in process group ``pgid``."""
    total_kb = 0
    for pid in group_members(pgid):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total_kb += int(line.split()[1])
    return round(total_kb / 1024, 1)


def wait_until_healthy(
    service: str,
    pid: int,
    healthy: Callable[[], bool],
    *,
    log_path: Path,
    timeout_s: float,
) -> None:
    """Poll ``healthy()`` until it returns True.

    Raises :class:`ServiceStartError` with the tail of the service's log when the
    process exits or ``timeout_s`` passes first.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        if not is_running(pid):
            raise ServiceStartError(
                f"{service} (pid {pid}) exited during startup; last lines of {log_path}:\n"
                f"{log_tail(log_path)}"
            )
        if healthy():
            return
        if time.monotonic() > deadline:
            raise ServiceStartError(
                f"{service} (pid {pid}) did not become healthy within {timeout_s:.0f} s; "
                f"last lines of {log_path}:\n{log_tail(log_path)}"
            )
        time.sleep(0.2)


def stop_process_group(pid: int, *, first_signal: int = signal.SIGTERM, grace_s: float = 15.0) -> None:
    """Stop the process group led by ``pid``: ``first_signal``, then SIGKILL after ``grace_s``.

    Returns once no live process of the group is left.
    """
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, first_signal)
        os.killpg(pid, signal.SIGCONT)  # a test may have SIGSTOPped it to simulate an outage
    deadline = time.monotonic() + grace_s
    while group_members(pid) or is_running(pid):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            deadline = time.monotonic() + grace_s
        time.sleep(0.05)
    proc = _children.pop(pid, None)
    if proc is not None:
        proc.wait()
