"""The driver's environment file: how a cluster-mode driver gets its connections.

In cluster deploy mode the driver runs in a YARN container, not under the Airflow task, so
it cannot inherit the task's environment. Spark's ways to give it one (``spark.yarn.
appMasterEnv.*``, ``spark.kubernetes.driverEnv.*``) put every value into the application's
conf, which the event log, the Spark UI's Environment page and YARN's container launch
script all show; Spark redacts only what matches ``spark.redaction.regex``. Instead the write
operator writes the driver's variables (the ``AIRFLOW_CONN_*`` connections, the
``EO_PIPELINE_SPEC``) into a private file named :data:`DRIVER_ENV_FILE`, ships it with the
application through YARN's distributed cache (``--files``), and passes only its base name
(``--driver-env-file eo-driver-env.json``); the driver reads it from its working directory
(where YARN links every shipped file) and puts the variables into its own environment
before anything else (:func:`load_driver_environment`).

The file is one JSON object of names to string values (:func:`environment_file_text`).
Errors name the file and the directory, never a value.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from airflow_provider_eo.errors import ConfigError

#: The base name the driver's environment file is shipped under.
DRIVER_ENV_FILE = "eo-driver-env.json"
#: The application argument that names it.
DRIVER_ENV_ARG = "--driver-env-file"


def environment_file_text(env: Mapping[str, str]) -> str:
    """The file's text for the variables ``env`` (a JSON object)."""
    return json.dumps(dict(env), sort_keys=True)


def load_driver_environment(name: str, directory: Path | None = None) -> list[str]:
    """Put the variables of the environment file ``name`` (a base name) in ``directory``
    (None: the working directory) into ``os.environ``; returns their names, sorted.

    Raises :class:`ConfigError` when ``name`` is not a plain file name, the file is missing
    or unreadable, or it is not a JSON object of strings.
    """
    where = Path.cwd() if directory is None else directory
    if not name or os.sep in name or name in (".", ".."):
        raise ConfigError(f"driver environment file {name!r}: must be a file name, not a path")
    path = where / name
    try:
        variables = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"driver environment file {name!r}: not in the working directory {where}") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"driver environment file {path}: unreadable: {type(exc).__name__}") from None
    if not isinstance(variables, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in variables.items()
    ):
        raise ConfigError(f"driver environment file {path}: not a JSON object of strings")
    os.environ.update(variables)
    return sorted(variables)
