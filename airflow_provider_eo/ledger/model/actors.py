"""Who changes the ledger: the actor each epoch transition and cursor move is recorded with.

Every ledger transaction carries an :class:`Actor` (``eo.epoch_transitions`` and
``eo.cursor_moves`` name it; the database refuses a change without one). Operators act as
their task instance, the ``eo-ledger`` CLI as the user on the host, recovery as the task
that recovers; anything else that opens a ledger
(:class:`~airflow_provider_eo.ledger.store.postgres_ledger.Ledger`) without saying acts as
its process.
"""

from __future__ import annotations

import getpass
import os
import re
import socket
import sys
from dataclasses import dataclass
from typing import Literal

ActorKind = Literal["task", "eo-ledger", "recovery", "process"]
_TASK_NAME = re.compile(r"^(?P<dag>[^/]+)/(?P<run>.+)/(?P<task>[^/ ]+) try (?P<try>\d+|\?)$")


def _user_at_host() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry for the uid (containers)
        user = f"uid {os.getuid()}"
    return f"{user}@{socket.gethostname()}"


@dataclass(frozen=True)
class Actor:
    """``kind`` and ``name`` of whoever changes the ledger, as recorded in its history."""

    kind: ActorKind
    name: str

    @classmethod
    def task(cls, dag_id: str, run_id: str, task_id: str, try_number: int | None) -> Actor:
        """An Airflow task instance: ``dag_id/run_id/task_id try N``."""
        return cls("task", f"{dag_id}/{run_id}/{task_id} try {try_number if try_number is not None else '?'}")

    @classmethod
    def cli(cls) -> Actor:
        """The ``eo-ledger`` command: ``user@host``."""
        return cls("eo-ledger", _user_at_host())

    @classmethod
    def process(cls) -> Actor:
        """The default: ``user@host pid N program``."""
        program = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
        return cls("process", f"{_user_at_host()} pid {os.getpid()} {program}")

    def task_instance(self) -> tuple[str, str, str, int | None] | None:
        """``(dag_id, run_id, task_id, try number)`` of an actor :meth:`task` named (acting as
        recovery too), read back from its name; None for any other actor."""
        match = _TASK_NAME.match(self.name) if self.kind in ("task", "recovery") else None
        if match is None:
            return None
        tried = None if match.group("try") == "?" else int(match.group("try"))
        return match.group("dag"), match.group("run"), match.group("task"), tried

    def recovering(self) -> Actor:
        """The same actor acting as recovery (its settlements are recorded as ``recovery``)."""
        return Actor("recovery", self.name)

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"
