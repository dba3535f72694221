"""The kept audits' routes of the plugin's app (included by :func:`~.app.create_app`).

* ``GET /api/audits/{audit_id}``: ``eo-ledger audit-show ID`` (the audit with its kept
  findings; :class:`~.api_models.AuditDetail`); 404 ``AuditNotFound`` for an unknown id
  and, alike, for an audit of a pipeline the caller may not see.
* ``GET /api/pipelines/{name}/audits?limit=``: ``eo-ledger audits`` (newest first, without
  findings; :class:`~.api_models.Audit`); 404 ``PipelineNotFound`` as for the charts.
* ``GET /audits/{audit_id}``: the audit's page (:mod:`.audit_page`); 404 page as above, 503
  page when the ledger cannot be reached.

One ledger read per request (``Ledger.audit`` is one transaction). Read-only.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse

from airflow_provider_eo.ledger.model.refusals import LedgerUnavailable
from airflow_provider_eo.plugins import api_models, views
from airflow_provider_eo.plugins.audit_page import render_audit_page, render_missing_audit
from airflow_provider_eo.plugins.html_parts import error_page
from airflow_provider_eo.plugins.route_dependencies import AccessDep, LedgerDep

log = logging.getLogger(__name__)
router = APIRouter()
AuditLimit = Annotated[int, Query(ge=1, le=views.MAX_AUDIT_LIMIT)]


def _missing(audit_id: int) -> JSONResponse:
    return JSONResponse(
        {"error": f"audit {audit_id} does not exist", "type": "AuditNotFound"}, status_code=404
    )


@router.get(
    "/api/audits/{audit_id}",
    response_model=api_models.AuditDetail,
    responses={**api_models.AUDIT_NOT_FOUND_RESPONSE, **api_models.ERROR_RESPONSES},
)
def get_audit(ledger: LedgerDep, access: AccessDep, audit_id: int) -> dict[str, Any] | JSONResponse:
    """One kept audit with its findings (404 if unknown or of a pipeline the caller may not see)."""
    found = views.audit(ledger, audit_id, access)
    return _missing(audit_id) if found is None else found


@router.get(
    "/api/pipelines/{name}/audits",
    response_model=list[api_models.Audit],
    responses={**api_models.PIPELINE_NOT_FOUND_RESPONSE, **api_models.ERROR_RESPONSES},
)
def get_pipeline_audits(
    ledger: LedgerDep, access: AccessDep, name: str, limit: AuditLimit = views.DEFAULT_AUDIT_LIMIT
) -> list[dict[str, Any]]:
    """A visible pipeline's ``limit`` newest audits, newest first, without their findings."""
    return views.pipeline_audits(ledger, name, access, limit)


@router.get("/audits/{audit_id}", response_class=HTMLResponse, responses=api_models.PAGE_RESPONSES)
def audit_page(request: Request, access: AccessDep, audit_id: int) -> HTMLResponse:
    """The audit's own page (404 page if unknown or hidden, 503 page if the ledger cannot be
    reached; any other error: 500, :mod:`.server_errors`)."""
    try:
        with request.app.state.ledger_factory() as opened:
            shown = views.audit(opened, audit_id, access)
    except LedgerUnavailable as exc:
        log.warning("Epochs plugin, the page of audit %s: %s", audit_id, exc)
        return HTMLResponse(
            error_page("Epoch ledger unavailable", str(exc), back_href="../"), status_code=503
        )
    if shown is None:
        return HTMLResponse(render_missing_audit(audit_id), status_code=404)
    return HTMLResponse(render_audit_page(shown))
