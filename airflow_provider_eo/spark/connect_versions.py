"""Spark Connect's client and server versions, checked against each other.

A Spark Connect session runs the client's Python functions (``mapInArrow``) in the server's
Python workers with the server's ``pyspark``: a client of another feature release pickles
what the server may not run, or runs differently. :func:`check_connect_versions` refuses,
naming both versions, when the client's ``pyspark.__version__`` and the server's
``spark.version`` differ in major or minor version (a patch release apart is accepted:
Spark keeps the Connect protocol within a feature release).
"""

from __future__ import annotations

import re
from typing import Any

from airflow_provider_eo.errors import ConfigError


class ConnectVersionMismatch(ConfigError, RuntimeError):
    """The Spark Connect server runs another Spark feature release than the client's pyspark."""


def feature_release(version: str) -> tuple[int, int]:
    """``(major, minor)`` of a Spark version (``4.3.0``, ``4.3.1-SNAPSHOT``, ``4.3.0.dev1``).

    Raises ValueError for a text that does not start with ``major.minor``.
    """
    match = re.match(r"\s*(\d+)\.(\d+)", version)
    if match is None:
        raise ValueError(f"not a Spark version: {version!r}")
    return int(match.group(1)), int(match.group(2))


def check_connect_versions(client_version: str, server_version: str, *, server: str = "the server") -> None:
    """Return when both versions are of one feature release; raise :class:`ConnectVersionMismatch`
    naming both (and ``server``, e.g. the connection id and URL) otherwise."""
    if feature_release(client_version) != feature_release(server_version):
        raise ConnectVersionMismatch(
            f"Spark Connect server {server} runs Spark {server_version} but this task's pyspark client "
            f"is {client_version}: client and server must be the same Spark feature release "
            f"({'.'.join(map(str, feature_release(client_version)))}.x); install pyspark=="
            f"{server_version} where the task runs, or point the connection at a {client_version} server"
        )


def check_session_versions(session: Any, *, server: str = "the server") -> str:
    """:func:`check_connect_versions` of this process's ``pyspark.__version__`` and the
    session's ``version`` (the server's ``spark.version``); returns the server's version."""
    import pyspark

    server_version = str(session.version)
    check_connect_versions(pyspark.__version__, server_version, server=server)
    return server_version
