"""A test auth manager: Airflow's SimpleAuthManager plus per-user, per-DAG denials.

SimpleAuthManager grants by role only (viewer/user/op/admin: every DAG alike), so it
cannot say "alice may not read ``eo_stream__evil``". This subclass can, through the real
plug-in point Airflow offers (``[core] auth_manager``); every other decision, login and
token included, stays SimpleAuthManager's.

``[eo_test] denied_dags`` (``AIRFLOW__EO_TEST__DENIED_DAGS``): comma-separated
``user:dag_id`` pairs; each denies that user every method on that DAG (read included).
Read at every check, so a test may change it between requests.
"""

from __future__ import annotations

from typing import Any

from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager
from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
from airflow.configuration import conf

DENIED_DAGS_SECTION, DENIED_DAGS_KEY = "eo_test", "denied_dags"


def denied_dags() -> dict[str, set[str]]:
    """``{username: {dag_id, ...}}`` from ``[eo_test] denied_dags``."""
    denied: dict[str, set[str]] = {}
    for pair in conf.get(DENIED_DAGS_SECTION, DENIED_DAGS_KEY, fallback="").split(","):
        user, _, dag_id = pair.strip().partition(":")
        if user and dag_id:
            denied.setdefault(user, set()).add(dag_id)
    return denied


class DagDenyingAuthManager(SimpleAuthManager):
    """SimpleAuthManager that refuses the DAGs ``[eo_test] denied_dags`` names per user."""

    def is_authorized_dag(
        self,
        *,
        method: Any,
        user: SimpleAuthManagerUser,
        access_entity: Any = None,
        details: Any = None,
    ) -> bool:
        """False for a denied ``details.id``; else SimpleAuthManager's role rule."""
        if details is not None and details.id in denied_dags().get(user.get_name(), set()):
            return False
        return super().is_authorized_dag(
            method=method, user=user, access_entity=access_entity, details=details
        )
