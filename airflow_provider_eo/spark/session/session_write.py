"""The write step in session mode, run by the Airflow task itself against a Spark Connect server.

:func:`write_on_session` is the submit mode's driver (``spark/driver/application.py``) with
another runner: the same :func:`~airflow_provider_eo.spark.driver.write_epoch.write_epoch`
(fencing check, task plan, vote WRITTEN under the epoch's fencing token, all through the
ledger's :class:`~airflow_provider_eo.ledger.protocol.EpochProtocol`), with the tasks run by
:class:`~.connect_tasks.SessionTasks` on the credentials' session of the server at ``url``
(:func:`credentials_session_id`: every write with the same credentials and provider copy, of
any pipeline, uses the same server-side session, so its Python workers stay warm and are
shared; pipelines with other credentials have sessions of their own). The session gets
the provider's zip as a Python artifact (:func:`~.executor_package.session_package`) and
nothing else: no conf, no credentials (those travel in the job's closure). The client's
channel is closed when the write ends; the session stays for the pipeline's next epoch. The
client retries a lost server every 5 s at most (:func:`lost_server_retry_policy`), so a write
whose server was restarted fails within seconds instead of up to a minute later.
Returns the write's :class:`~airflow_provider_eo.spark.driver.write_epoch.ExitCode`.
"""

from __future__ import annotations

import hashlib
import logging
import socket
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from airflow_provider_eo.config.spec_digest import spec_digest
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.errors import ClusterAccessError
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.spark.connect_versions import check_session_versions
from airflow_provider_eo.spark.driver.task_settings import task_settings
from airflow_provider_eo.spark.driver.write_epoch import ExitCode, write_epoch
from airflow_provider_eo.spark.session.connect_tasks import SessionTasks
from airflow_provider_eo.spark.session.executor_package import client_identity, session_package

log = logging.getLogger(__name__)


def credentials_session_id(connections: Mapping[str, str]) -> str:
    """The server-side session the writes with these connection values share: a UUID derived
    from the provider's sources' digest and the connection values (their secrets), not from
    the pipeline. Pipelines with the same credentials then share one session and its warm
    Python workers (one set per server, not per pipeline); a new provider copy or rotated
    credentials get a new session, and nobody without the credentials can name the session."""
    digest = hashlib.sha256()
    digest.update(client_identity().digest.encode())
    for name in sorted(connections):
        digest.update(f"\0{name}={connections[name]}".encode())
    return str(uuid.UUID(bytes=digest.digest()[:16], version=4))


def with_session_id(url: str, session_id: str) -> str:
    """``url`` (``sc://host:port/`` with or without ``;key=value`` parameters) naming ``session_id``."""
    if ";" in url:  # sc://host:port/;token=...
        return f"{url};session_id={session_id}"
    return f"{url.rstrip('/')}/;session_id={session_id}"


class ConnectServerUnreachable(ClusterAccessError):
    """Nothing accepts connections at the Spark Connect server's address (nothing was written)."""


#: Spark Connect's default port, when the URL names none.
DEFAULT_CONNECT_PORT = 15002


def check_reachable(url: str, where: str, timeout_s: float = 10.0) -> None:
    """Raise :class:`ConnectServerUnreachable` naming ``where`` and the address when no TCP
    connection to the server of ``url`` opens within ``timeout_s``: the Spark Connect client
    would otherwise retry for minutes before failing."""
    netloc = url.removeprefix("sc://").split("/", 1)[0]
    host, _, port = netloc.rpartition(":") if ":" in netloc else (netloc, "", str(DEFAULT_CONNECT_PORT))
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise ConnectServerUnreachable(
            f"{where}: the Spark Connect server at {host}:{port} does not accept connections ({exc}); "
            "nothing written (is it running? eo-stack up --spark-connect starts the local one)"
        ) from exc


#: The Spark Connect client's retries of a server it lost: waits grow from 50 ms by 4x up to
#: :data:`RETRY_MAX_BACKOFF_MS` (the client's default goes up to 60 s, so a write reached a
#: restarted server up to a minute after it answered again), :data:`RETRY_MAX_RETRIES` of
#: them: about 10 minutes in all, the default's tolerance.
RETRY_MAX_BACKOFF_MS = 5_000
RETRY_MAX_RETRIES = 125


def lost_server_retry_policy() -> Any:
    """The client's retry policy for session-mode writes (:data:`RETRY_MAX_BACKOFF_MS`,
    :data:`RETRY_MAX_RETRIES`; the default policy's retryable errors and jitter)."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    return DefaultPolicy(max_retries=RETRY_MAX_RETRIES, max_backoff=RETRY_MAX_BACKOFF_MS)


def open_session(url: str, session_id: str | None = None) -> Any:
    """A Spark Connect session on the server at ``url`` (``sc://host:port/;...``) with the
    provider's zip added as a Python artifact (adding it again to a shared session is a no-op):
    a new one, or the server's session ``session_id`` (created by its first client). Its
    client retries a lost server by :func:`lost_server_retry_policy`.

    Raises ``ConnectVersionMismatch`` (a ``ConfigError``) naming both versions when the
    server's Spark is another feature release than this client's pyspark."""
    from pyspark.sql.connect.session import SparkSession

    remote = url if session_id is None else with_session_id(url, session_id)
    session = SparkSession.builder.remote(remote).create()
    session.client.set_retry_policies([lost_server_retry_policy()])
    check_session_versions(session, server=url.split("/;", 1)[0])
    add_session_package(session)
    return session


#: What the server answers a client that adds an artifact while another adds the same one
#: to the same session (:func:`add_session_package`): the move lost the race, or the
#: comparison with the other's copy read it half written.
CONCURRENT_ADD_ERRORS = ("FileAlreadyExistsException", "ARTIFACT_ALREADY_EXISTS")


def add_session_package(session: Any) -> None:
    """Add the provider's zip to ``session`` as a Python artifact. The server takes the same
    file again as a no-op, but two clients adding it to one session at once race in its
    compare-then-move: the loser's ``addArtifacts`` fails (:data:`CONCURRENT_ADD_ERRORS`; seen
    with 4 of a fleet's writes opening the shared session at once, and with 8 clients opening
    a new one), and is sent again, which then finds the winner's copy. A zip of the same name
    (same version and digest) with other bytes would fail again and raise."""
    path = str(session_package())
    try:
        session.addArtifacts(path, pyfile=True)
    except Exception as exc:
        if not any(error in str(exc) for error in CONCURRENT_ADD_ERRORS):
            raise
        log.info("the provider's zip was being added by another client at once: adding it again")
        session.addArtifacts(path, pyfile=True)


def close_session(session: Any, *, release: bool) -> None:
    """Close this client's channel; ``release`` also ends the server-side session (a shared
    pipeline session is kept: the server drops it after its idle timeout)."""
    session.release_session_on_close = release
    session.stop()


def write_on_session(
    session: Any,
    spec: PipelineSpec,
    epoch_id: int,
    *,
    tag: str,
    fencing_token: str | None,
    ledger_dsn: str,
    ledger_conn_id: str,
    actor: Actor,
    conn_ids: dict[str, str],
    on_runner: Callable[[SessionTasks], None] = lambda runner: None,
) -> ExitCode:
    """Write and vote ``epoch_id`` of ``spec`` with its tasks as one job on ``session``
    tagged ``tag``. Connections are read from ``AIRFLOW_CONN_*`` in this process's
    environment (``conn_ids``: ``ledger_conn_id``, ``kafka_conn_id``, ``hbase_conn_id``,
    ``schema_registry_conn_id``). ``on_runner`` is handed the runner before the job starts
    (the operator keeps it for ``on_kill``). Never raises for the outcomes of
    :func:`write_epoch`'s contract."""
    runner = SessionTasks(session, tag, client_identity())
    on_runner(runner)
    log.info("pipeline=%s epoch_id=%s: session write tag=%s", spec.name, epoch_id, tag)
    with Ledger(ledger_dsn, conn_id=ledger_conn_id, actor=actor) as ledger:
        return write_epoch(
            ledger,
            spec.name,
            epoch_id,
            lambda: task_settings(spec, epoch_id, **conn_ids),
            spec.spark.split_size,
            fencing_token=fencing_token,
            spec_digest=spec_digest(spec),
            runner=runner,
        )
