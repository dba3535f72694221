"""Which pipelines a caller of the UI plugin may see.

The rule (Airflow's per-DAG access control, applied to the ledger): pipeline ``<p>`` is
visible to a user exactly when Airflow's auth manager lets that user read (``GET``) the
DAG ``eo_stream__<p>``. Read access to ``eo_backfill__<p>`` alone grants nothing: the
stream DAG owns the pipeline's cursor and most of its epochs, and the issue's rule is
"who may not read ``eo_stream__<p>`` cannot see that pipeline's epochs". Any auth manager
works (Simple, FAB, Keycloak...): the question goes through its own
``filter_authorized_dag_ids``, which an auth manager may answer in one batch. The DAG
need not exist in the metadata database (the ledger may outlive a pipeline's DAGs).

Import-light: the auth manager and the metadata models are touched only at request time.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any, Protocol

from airflow_provider_eo.dag_ids import stream_dag_id


class PipelineAccess(Protocol):
    """The pipelines one caller may see (one instance per request)."""

    @property
    def restricted(self) -> bool:
        """False when every pipeline is visible (no need to ask)."""
        ...

    def visible(self, pipelines: Iterable[str]) -> frozenset[str]:
        """The subset of ``pipelines`` the caller may see."""
        ...


class EveryPipeline:
    """No restriction: the app built without an auth manager (tests, embedding)."""

    restricted = False

    def visible(self, pipelines: Iterable[str]) -> frozenset[str]:
        """All of ``pipelines``."""
        return frozenset(pipelines)


def every_pipeline() -> PipelineAccess:
    """FastAPI dependency: :class:`EveryPipeline`."""
    return EveryPipeline()


class StreamDagReaders:
    """Airflow's answer: the pipelines whose stream DAG ``user`` may read.

    :param auth_manager: the API server's auth manager (``get_auth_manager()``).
    :param user: the authenticated caller (``get_user``).
    :param multi_team: ``[core] multi_team``: the DAGs' teams are then looked up in the
        metadata database, as the API server's own ``requires_access_dag`` does.
    """

    restricted = True

    def __init__(self, auth_manager: Any, user: Any, *, multi_team: bool = False) -> None:
        self.auth_manager, self.user, self.multi_team = auth_manager, user, multi_team
        self._answers: dict[str, bool] = {}

    def visible(self, pipelines: Iterable[str]) -> frozenset[str]:
        """The subset of ``pipelines`` whose ``eo_stream__<p>`` the user may GET (cached)."""
        wanted = set(pipelines)
        unknown = {stream_dag_id(p): p for p in wanted if p not in self._answers}
        if unknown:
            allowed: set[str] = set()
            for team, dag_ids in self._by_team(sorted(unknown)).items():
                allowed |= self.auth_manager.filter_authorized_dag_ids(
                    dag_ids=dag_ids, user=self.user, method="GET", team_name=team
                )
            self._answers.update({p: dag_id in allowed for dag_id, p in unknown.items()})
        return frozenset(p for p in wanted if self._answers[p])

    def _by_team(self, dag_ids: list[str]) -> dict[str | None, set[str]]:
        teams: dict[str, str | None] = {}
        if self.multi_team:
            from airflow.models.dag import DagModel

            teams = DagModel.get_dag_id_to_team_name_mapping(dag_ids)
        grouped: dict[str | None, set[str]] = defaultdict(set)
        for dag_id in dag_ids:
            grouped[teams.get(dag_id)].add(dag_id)
        return grouped
