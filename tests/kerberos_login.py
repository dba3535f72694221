"""The provider's Kerberos login is process-wide (``clients/hbase_thrift.py``: ``KRB5_CONFIG``,
``KRB5_CLIENT_KTNAME``, ``KRB5CCNAME`` and the one-identity guard): :func:`restored_login` puts
them back as they were, so a test's login never reaches a later test (libpq, for one, tries
GSSAPI to PostgreSQL first whenever a ticket cache is named)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from airflow_provider_eo.clients import hbase_thrift

KRB5_VARIABLES = ("KRB5_CONFIG", "KRB5_CLIENT_KTNAME", "KRB5CCNAME")


def logout() -> None:
    """Forget this process's Kerberos login (the client allows one identity per process)."""
    hbase_thrift._applied.clear()
    for name in KRB5_VARIABLES:
        os.environ.pop(name, None)


@contextmanager
def restored_login() -> Iterator[None]:
    """No login inside; afterwards the variables exactly as they were before, the guard cleared."""
    saved = {name: os.environ.get(name) for name in KRB5_VARIABLES}
    logout()
    try:
        yield
    finally:
        logout()
        os.environ.update({name: value for name, value in saved.items() if value is not None})
