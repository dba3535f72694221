"""Credential files: the local files a connection names (keytabs, CAs, client keys), and how
they reach a write application's driver and executors.

A connection's ``extra`` may name files by path (:data:`CREDENTIAL_FILE_KEYS`: Kafka's and the
registry's ``ssl.*.location``, the ledger's ``sslrootcert``/``sslcert``/``sslkey``, HBase's
``kerberos_keytab``/``ssl_ca``/``krb5_conf``). Where they are read depends on the deploy mode:

* **local and client mode**: the driver runs where spark-submit runs and the executors are
  on hosts that see the same paths (one host, or paths every node mounts); the files are used
  in place. :func:`unreadable_files` lets the operator refuse a missing or unreadable one
  before anything is submitted.
* **YARN cluster mode**: the driver and the executors run in YARN containers. Each file is
  shipped through YARN's distributed cache (``--files <path>#<name>``, :func:`files_entries`)
  under :attr:`CredentialFile.shipped_name`, and the connections the driver gets name that
  base name instead (:func:`shipped_environment`), which resolves in the working directory of
  every container, driver and executors alike. YARN localizes a file that is not
  world-readable as a private resource, readable by the application's user only.

Only file names and paths ever travel in arguments; the files' contents never do, and no
function here reads them (:func:`describe` hashes one, for the driver's log).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: ``extra`` keys whose value is a local file path, in any connection the write step uses.
CREDENTIAL_FILE_KEYS = (
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
    "https.ca.location",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "sslcrl",
    "kerberos_keytab",
    "ssl_ca",
    "krb5_conf",
)

CONN_ENV_PREFIX = "AIRFLOW_CONN_"

#: The prefix of the HBase connection form's fields in ``extra`` (``extra__eo_hbase__ssl_ca``).
FORM_FIELD_PREFIX = "extra__eo_hbase__"

#: Values of those keys that name no file: librdkafka's ``probe`` (the system's CAs) and
#: libpq's ``system`` (``sslrootcert=system``). Neither checked nor shipped.
NOT_A_FILE = frozenset({"probe", "system"})


@dataclass(frozen=True)
class CredentialFile:
    """The file ``path`` named by ``extra[key]`` of the connection in ``env_var``."""

    env_var: str
    key: str
    path: str

    @property
    def conn_id(self) -> str:
        """The connection's id as its variable spells it, lower-cased (``eo_hbase``)."""
        return self.env_var.removeprefix(CONN_ENV_PREFIX).lower()

    @property
    def setting(self) -> str:
        """The setting's name without the connection form's prefix (``ssl_ca``)."""
        return self.key.removeprefix(FORM_FIELD_PREFIX)

    @property
    def shipped_name(self) -> str:
        """The base name the file is shipped under: ``eo-<conn_id>-<setting>`` (dots as ``_``)."""
        return f"eo-{self.conn_id}-{self.setting.replace('.', '_')}"


def _connection(value: str) -> dict[str, Any] | None:
    """The connection JSON ``value`` with ``extra`` as a dict; None for a URI connection."""
    try:
        connection = json.loads(value)
    except ValueError:
        return None
    if not isinstance(connection, dict):
        return None
    extra = connection.get("extra")
    if isinstance(extra, str):
        try:
            extra = json.loads(extra) if extra.strip() else {}
        except ValueError:
            return None
    connection["extra"] = extra if isinstance(extra, dict) else {}
    return connection


def credential_files(env: Mapping[str, str]) -> list[CredentialFile]:
    """Every credential file the JSON connections in ``env`` (``AIRFLOW_CONN_*`` values) name,
    in variable then ``extra`` order, the HBase form's ``extra__eo_hbase__<key>`` fields
    included; :data:`NOT_A_FILE` values are none. URI connections name none (put files in a
    JSON ``extra``)."""
    found: list[CredentialFile] = []
    for env_var in sorted(k for k in env if k.startswith(CONN_ENV_PREFIX)):
        connection = _connection(env[env_var])
        extra = connection["extra"] if connection else {}
        found.extend(
            CredentialFile(env_var, key, str(value))
            for key, value in extra.items()
            if key.removeprefix(FORM_FIELD_PREFIX) in CREDENTIAL_FILE_KEYS
            and value not in (None, "")
            and str(value) not in NOT_A_FILE
        )
    return found


def unreadable_files(files: list[CredentialFile]) -> list[str]:
    """One ``connection 'c': extra.key = 'path': <why>`` line per file that is not a readable
    regular file on this machine (a CA directory for a ``*ca.location`` key is accepted: both
    librdkafka and the registry's client take one); empty when all are readable."""
    problems = []
    for file in files:
        path = Path(file.path)
        if path.is_dir() and file.setting.endswith("ca.location"):
            continue
        if not path.is_file():
            why = "no such file" if not path.exists() else "not a regular file"
        elif not os.access(path, os.R_OK):
            why = "not readable by this user"
        else:
            continue
        problems.append(f"connection {file.conn_id!r}: extra.{file.key} = {file.path!r}: {why}")
    return problems


def shippable(files: list[CredentialFile]) -> list[CredentialFile]:
    """The ``files`` that are regular files here: what YARN's ``--files`` can ship. Others (a CA
    directory) stay named as they are and must exist at that path on every node."""
    return [file for file in files if Path(file.path).is_file()]


def shipped_environment(env: Mapping[str, str], files: list[CredentialFile]) -> dict[str, str]:
    """``env`` with each file's ``extra`` value replaced by its shipped base name."""
    shipped = dict(env)
    for env_var in {file.env_var for file in files}:
        connection = _connection(shipped[env_var])
        assert connection is not None  # credential_files found keys in it
        for file in (f for f in files if f.env_var == env_var):
            connection["extra"][file.key] = file.shipped_name
        shipped[env_var] = json.dumps(connection)
    return shipped


def files_entries(files: list[CredentialFile]) -> list[str]:
    """``--files`` entries shipping each file under its name: ``<absolute path>#<name>``."""
    return [f"{Path(file.path).resolve()}#{file.shipped_name}" for file in files]


def describe(file: CredentialFile, directory: Path | None = None) -> str:
    """``<conn>.<key>=<path> mode=0600 sha256=<16 hex>`` of the file as this process sees it
    (``directory``: where a relative path resolves; None: the working directory), or
    ``... missing``. For logs: a digest prefix and the mode, never the content."""
    path = Path(file.path) if directory is None or Path(file.path).is_absolute() else directory / file.path
    label = f"{file.conn_id}.{file.key}={file.path}"
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError as exc:
        return f"{label} missing ({type(exc).__name__})"
    return f"{label} mode={mode:04o} sha256={digest}"
