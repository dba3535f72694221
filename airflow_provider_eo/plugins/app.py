"""The FastAPI app of the UI plugin: a JSON API and one HTML page over the epoch ledger.

Routes (relative to the mount point, ``/eo`` in the Airflow API server):

* ``GET /`` : the HTML page; query ``pipeline``, ``state``, ``kind``, ``limit``, and
  ``dag_id`` (an ``eo_stream__<p>``/``eo_backfill__<p>`` DAG id preselects ``<p>``
  unless ``pipeline`` is given).
* ``GET /api/pipelines`` : ``eo-ledger pipelines`` with lag per partition.
* ``GET /api/epochs?pipeline=&state=&kind=&limit=`` : ``eo-ledger epochs --limit``.
* ``GET /api/epochs/{epoch_id}`` : ``eo-ledger epoch`` (the epoch with its ``history``,
  oldest first); 404 for an unknown id.
* ``GET /api/pipelines/{name}/charts?window=`` : the Epochs page's chart series
  (:mod:`.chart_views`); 404 for an unknown pipeline, 422 for a bad window.
* ``GET /epochs/{epoch_id}`` : the epoch's own HTML page (:mod:`.epoch_page`); 404 page
  for an unknown id.
* ``GET /api/audits/{audit_id}``, ``GET /api/pipelines/{name}/audits?limit=`` and the
  audit's page ``GET /audits/{audit_id}``: the kept audits (:mod:`.audit_routes`).

Answers are the typed models of :mod:`.api_models` (``/api/openapi.json`` describes
them). Errors are JSON ``{"error": ..., "type": ...}`` as in the CLI: 404 unknown epoch,
422 invalid query, 503 ledger unreachable (:class:`LedgerUnavailable`, its message naming
the ledger connection: conn id and ``host:port/db``, never the password). Any other
error is a bug: logged with its traceback and answered 500 (:mod:`.server_errors`; the
HTML routes answer an HTML page), never disguised as an unreachable ledger. Every route
sees only the pipelines the ``access`` resolver allows (:mod:`.access`): a hidden
pipeline is absent, its epochs are 404 like unknown ones. Lag comes from ``watermarks``
(:mod:`.partition_lag`); when Kafka cannot answer, lag is null/"unknown" and the rest
still answers. Each request opens a ledger
from ``ledger_factory`` and closes it; handlers are sync (psycopg2 blocks: FastAPI runs
them in its thread pool). Read-only: nothing here changes the ledger.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response

from airflow_provider_eo.dag_ids import pipeline_from_dag_id
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.refusals import EpochNotFound, LedgerUnavailable, PipelineNotFound
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState
from airflow_provider_eo.plugins import api_models, audit_routes, chart_models, chart_views, views
from airflow_provider_eo.plugins.chart_window import DEFAULT_WINDOW, ChartWindow
from airflow_provider_eo.plugins.epoch_page import render_epoch_page, render_missing
from airflow_provider_eo.plugins.html_parts import error_page
from airflow_provider_eo.plugins.page import render_page
from airflow_provider_eo.plugins.partition_lag import WatermarkSource
from airflow_provider_eo.plugins.route_dependencies import (
    AccessDep,
    AccessResolver,
    LedgerDep,
    LedgerFactory,
    everyone,
)
from airflow_provider_eo.plugins.server_errors import InternalErrors

log = logging.getLogger(__name__)
Limit = Annotated[int, Query(ge=1, le=views.MAX_EPOCH_LIMIT)]


def _error(status: int, exc: Exception | str, kind: str | None = None) -> JSONResponse:
    message = str(exc)
    return JSONResponse({"error": message, "type": kind or type(exc).__name__}, status_code=status)


def create_app(
    ledger_factory: LedgerFactory,
    dependencies: Sequence[Any] = (),
    *,
    access: AccessResolver = everyone,
    watermarks: WatermarkSource | None = None,
) -> FastAPI:
    """The plugin app.

    ``ledger_factory`` opens the ledger of one request; it and the ledger raise
    :class:`LedgerUnavailable` when the ledger cannot be reached (answered 503).
    ``dependencies`` (e.g. Airflow's auth check) guard every route; ``access`` resolves,
    per request, which pipelines the caller may see; ``watermarks`` opens the Kafka
    reader of the lag columns (None: lag off, shown as unknown). Any other exception is
    logged with its traceback and answered 500 (:class:`~.server_errors.InternalErrors`).
    """
    app = FastAPI(
        title="Epoch ledger (airflow-provider-eo)",
        dependencies=list(dependencies),
        docs_url="/api/docs",
        openapi_url="/api/openapi.json",
        redoc_url=None,
    )

    app.state.ledger_factory = ledger_factory
    app.state.resolve_access = access
    app.add_middleware(InternalErrors)
    app.include_router(audit_routes.router)

    @app.exception_handler(EpochNotFound)
    @app.exception_handler(PipelineNotFound)
    def _not_found(request: Request, exc: Exception) -> JSONResponse:
        return _error(404, exc)

    @app.exception_handler(LedgerUnavailable)
    def _unavailable(request: Request, exc: Exception) -> JSONResponse:
        log.warning("Epochs plugin: %s", exc)
        return _error(503, exc)

    @app.exception_handler(RequestValidationError)
    def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return _error(422, problems, "InvalidRequest")

    @app.get("/api/pipelines", response_model=list[api_models.Pipeline], responses=api_models.ERROR_RESPONSES)
    def get_pipelines(ledger: LedgerDep, access: AccessDep) -> list[dict[str, Any]]:
        """Every visible pipeline: epoch counts, open epochs, cursors with lag, dead letters, gaps."""
        return views.pipelines(ledger, access, watermarks)

    @app.get("/api/epochs", response_model=list[api_models.Epoch], responses=api_models.ERROR_RESPONSES)
    def get_epochs(
        ledger: LedgerDep,
        access: AccessDep,
        pipeline: str | None = None,
        state: EpochState | None = None,
        kind: EpochKind | None = None,
        limit: Limit = views.DEFAULT_EPOCH_LIMIT,
    ) -> list[dict[str, Any]]:
        """The newest ``limit`` matching epochs of visible pipelines, oldest first."""
        wanted = EpochFilter(
            pipeline=pipeline, states=None if state is None else frozenset({state}), kind=kind, limit=limit
        )
        return views.epochs(ledger, wanted, access)

    @app.get(
        "/api/epochs/{epoch_id}",
        response_model=api_models.EpochDetail,
        responses={**api_models.NOT_FOUND_RESPONSE, **api_models.ERROR_RESPONSES},
    )
    def get_epoch(ledger: LedgerDep, access: AccessDep, epoch_id: int) -> dict[str, Any]:
        """One epoch with its ranges and history (404 if unknown or of a pipeline the caller
        may not see)."""
        return views.epoch(ledger, epoch_id, access)

    @app.get(
        "/api/specs/{digest}",
        response_model=api_models.RecordedSpec,
        responses={**api_models.NOT_FOUND_RESPONSE, **api_models.ERROR_RESPONSES},
    )
    def get_spec(ledger: LedgerDep, access: AccessDep, digest: str) -> dict[str, Any] | JSONResponse:
        """The spec recorded under a mapping digest (404 if unknown or of a pipeline the
        caller may not see)."""
        found = views.recorded_spec(ledger, digest, access)
        if found is None:
            return _error(404, f"no spec recorded under digest {digest!r}", "SpecNotFound")
        return found

    @app.get(
        "/api/pipelines/{name}/charts",
        response_model=chart_models.Charts,
        responses={**api_models.PIPELINE_NOT_FOUND_RESPONSE, **api_models.ERROR_RESPONSES},
    )
    def get_charts(
        ledger: LedgerDep, access: AccessDep, name: str, window: str = DEFAULT_WINDOW
    ) -> dict[str, Any] | JSONResponse:
        """The chart series of a visible pipeline over ``window`` (``1h``, ``7d``, ``50e``...):
        lag samples, and per committed epoch its records, rate, phases and dead letters."""
        try:
            chosen = ChartWindow.parse(window)
        except ValueError as exc:
            return _error(422, exc, "InvalidRequest")
        return chart_views.charts(ledger, name, chosen, access)

    @app.get("/epochs/{epoch_id}", response_class=HTMLResponse, responses=api_models.PAGE_RESPONSES)
    def epoch_page(access: AccessDep, epoch_id: int) -> HTMLResponse:
        """The epoch's own page (404 page if unknown or hidden, 503 page if the ledger cannot
        be reached; any other error: 500, :mod:`.server_errors`)."""
        try:
            with ledger_factory() as opened:
                shown = views.epoch_page_data(opened, epoch_id, access)
        except EpochNotFound as exc:
            return HTMLResponse(render_missing(str(exc)), status_code=404)
        except LedgerUnavailable as exc:
            log.warning("Epochs plugin, the page of epoch %s: %s", epoch_id, exc)
            return HTMLResponse(
                error_page("Epoch ledger unavailable", str(exc), back_href="../"), status_code=503
            )
        return HTMLResponse(render_epoch_page(shown))

    @app.get("/", response_class=HTMLResponse, responses=api_models.PAGE_RESPONSES)
    def page(
        access: AccessDep,
        pipeline: str | None = None,
        state: EpochState | Literal[""] | None = None,
        kind: EpochKind | Literal[""] | None = None,
        limit: Limit = views.DEFAULT_EPOCH_LIMIT,
        dag_id: str | None = None,
        window: str = DEFAULT_WINDOW,
    ) -> Response:
        """The HTML page (an unreachable ledger is shown in the page, status 503; any other
        error: 500, :mod:`.server_errors`); with a pipeline chosen, its charts over ``window``."""
        try:
            chart_window = ChartWindow.parse(window)
        except ValueError as exc:
            return _error(422, exc, "InvalidRequest")
        chosen = pipeline if pipeline is not None else pipeline_from_dag_id(dag_id)
        states = frozenset({EpochState(state)}) if state else None
        selected = EpochFilter(pipeline=chosen or None, states=states, kind=kind or None, limit=limit)
        data: dict[str, Any] = {"pipeline_names": [], "pipelines": [], "epochs": [], "lag_error": None}
        status, error = 200, None
        try:
            with ledger_factory() as opened:
                data = views.page_data(opened, selected, access, watermarks)
                if selected.pipeline is not None and selected.pipeline in data["pipeline_names"]:
                    data["charts"] = chart_views.charts(opened, selected.pipeline, chart_window, access)
        except LedgerUnavailable as exc:
            log.warning("Epochs plugin, the Epochs page: %s", exc)
            status, error = 503, str(exc)
        page_html = render_page(**data, selected=selected, window=chart_window, error=error)
        return HTMLResponse(page_html, status_code=status)

    return app
