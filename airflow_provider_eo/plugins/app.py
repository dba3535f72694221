"""The FastAPI app of the UI plugin: a JSON API and one HTML page over the epoch ledger.

Routes (relative to the mount point, ``/eo`` in the Airflow API server):

* ``GET /`` : the HTML page; query ``pipeline``, ``state``, ``kind``, ``limit``, and
  ``dag_id`` (an ``eo_stream__<p>``/``eo_backfill__<p>`` DAG id preselects ``<p>``
  unless ``pipeline`` is given).
* ``GET /api/pipelines`` : ``eo-ledger pipelines``.
* ``GET /api/epochs?pipeline=&state=&kind=&limit=`` : ``eo-ledger epochs --limit``.
* ``GET /api/epochs/{epoch_id}`` : ``eo-ledger epoch``; 404 for an unknown id.

Errors are JSON ``{"error": ..., "type": ...}`` as in the CLI: 404 unknown epoch, 422
invalid query, 503 ledger unreachable. Each request opens a ledger from
``ledger_factory`` and closes it; handlers are sync (psycopg2 blocks: FastAPI runs them
in its thread pool). Read-only: nothing here changes the ledger.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Annotated, Any, Literal

import psycopg2
from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse

from airflow_provider_eo.ledger.errors import EpochNotFound, LedgerUnavailable
from airflow_provider_eo.ledger.states import EpochKind, EpochState
from airflow_provider_eo.ledger.store.ledger import Ledger
from airflow_provider_eo.ledger.store.queries import EpochFilter
from airflow_provider_eo.plugins import views
from airflow_provider_eo.plugins.page import render_page

LedgerFactory = Callable[[], Ledger]
log = logging.getLogger(__name__)
Limit = Annotated[int, Query(ge=1, le=views.MAX_EPOCH_LIMIT)]


def _error(status: int, exc: Exception | str, kind: str | None = None) -> JSONResponse:
    message = str(exc)
    return JSONResponse({"error": message, "type": kind or type(exc).__name__}, status_code=status)


def _ledger(request: Request) -> Iterator[Ledger]:
    """Dependency: a ledger from the app's factory, closed after the request."""
    try:
        opened: Ledger = request.app.state.ledger_factory()
    except Exception as exc:  # e.g. the connection is not defined
        raise LedgerUnavailable("the ledger connection", f"{type(exc).__name__}: {exc}") from exc
    try:
        yield opened
    finally:
        opened.close()


LedgerDep = Annotated[Ledger, Depends(_ledger)]


def create_app(ledger_factory: LedgerFactory, dependencies: Sequence[Any] = ()) -> FastAPI:
    """The plugin app; ``dependencies`` (e.g. Airflow's auth check) guard every route."""
    app = FastAPI(
        title="Epoch ledger (airflow-provider-eo)",
        dependencies=list(dependencies),
        docs_url="/api/docs",
        openapi_url="/api/openapi.json",
        redoc_url=None,
    )

    app.state.ledger_factory = ledger_factory

    @app.exception_handler(EpochNotFound)
    def _not_found(request: Request, exc: EpochNotFound) -> JSONResponse:
        return _error(404, exc)

    @app.exception_handler(LedgerUnavailable)
    @app.exception_handler(psycopg2.OperationalError)  # e.g. while migrating on first use
    def _unavailable(request: Request, exc: Exception) -> JSONResponse:
        message = str(exc) if isinstance(exc, LedgerUnavailable) else f"epoch ledger unavailable: {exc}"
        return _error(503, message.strip(), "LedgerUnavailable")

    @app.exception_handler(RequestValidationError)
    def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return _error(422, problems, "InvalidRequest")

    @app.get("/api/pipelines")
    def get_pipelines(ledger: LedgerDep) -> list[dict[str, Any]]:
        """Every pipeline: epoch counts, open epochs, cursors, dead letters, gaps."""
        return views.pipelines(ledger)

    @app.get("/api/epochs")
    def get_epochs(
        ledger: LedgerDep,
        pipeline: str | None = None,
        state: EpochState | None = None,
        kind: EpochKind | None = None,
        limit: Limit = views.DEFAULT_EPOCH_LIMIT,
    ) -> list[dict[str, Any]]:
        """The newest ``limit`` matching epochs, oldest first."""
        return views.epochs(ledger, EpochFilter(pipeline=pipeline, state=state, kind=kind, limit=limit))

    @app.get("/api/epochs/{epoch_id}")
    def get_epoch(ledger: LedgerDep, epoch_id: int) -> dict[str, Any]:
        """One epoch with its ranges."""
        return views.epoch(ledger, epoch_id)

    @app.get("/", response_class=HTMLResponse)
    def page(
        pipeline: str | None = None,
        state: EpochState | Literal[""] | None = None,
        kind: EpochKind | Literal[""] | None = None,
        limit: Limit = views.DEFAULT_EPOCH_LIMIT,
        dag_id: str | None = None,
    ) -> HTMLResponse:
        """The HTML page (a ledger error is shown in the page, status 503)."""
        chosen = pipeline if pipeline is not None else views.pipeline_from_dag_id(dag_id)
        selected = EpochFilter(pipeline=chosen or None, state=state or None, kind=kind or None, limit=limit)
        data: dict[str, Any] = {"pipeline_names": [], "pipelines": [], "epochs": []}
        status, error = 200, None
        try:
            with ledger_factory() as opened:
                data = views.page_data(opened, selected)
        except Exception as exc:  # the page reports any ledger failure instead of a bare 500
            log.warning("epoch ledger page: %s", exc)
            status, error = 503, f"epoch ledger unavailable: {type(exc).__name__}: {exc}".strip()
        return HTMLResponse(render_page(**data, selected=selected, error=error), status_code=status)

    return app
