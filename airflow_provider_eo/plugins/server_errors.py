"""Errors of the plugin's routes that no handler answers: bugs, answered 500, never
disguised as an unreachable ledger.

:class:`InternalErrors` wraps the plugin app (inside FastAPI's exception handlers, so
404, 422 and 503 answers never reach it): an exception escaping a route or one of its
dependencies is logged with its traceback (``logger.exception``) and answered with
status 500, as JSON (:class:`~.api_models.ErrorBody`, type ``InternalError``) for the
JSON API, as an HTML page (:func:`error_page`) for the HTML routes. The body names only
the exception's class: its message may carry values the log keeps but a browser should
not show.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from airflow_provider_eo.plugins.html_parts import error_page

log = logging.getLogger(__name__)

#: ``ErrorBody.type`` of a 500 answer.
INTERNAL_ERROR = "InternalError"


def internal_error_message(exc: BaseException) -> str:
    """What a 500 answer says: the exception's class and where its traceback is."""
    name = type(exc).__name__
    return f"internal error ({name}) of the Epochs plugin; its traceback is in the API server's log"


def _is_html_route(scope: MutableMapping[str, Any]) -> bool:
    """True when the route the request matched answers HTML (the pages, not the JSON API)."""
    route = scope.get("route")
    return isinstance(route, APIRoute) and route.response_class is HTMLResponse


class InternalErrors:
    """ASGI middleware: an exception no handler answered becomes a logged 500.

    Promises: the exception is logged once with its traceback (logger
    ``airflow_provider_eo.plugins.server_errors``) and the client gets a 500 answer
    (JSON ``{"error", "type": "InternalError"}``, or :func:`error_page` for HTML routes);
    the exception is not re-raised. If the response had already started, the exception
    is logged and re-raised (the server then closes the connection).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            log.exception("Epochs plugin: %s %s failed", scope.get("method"), scope.get("path"))
            if started:
                raise
            await self._answer(scope, exc)(scope, receive, send)

    @staticmethod
    def _answer(scope: Scope, exc: Exception) -> Response:
        message = internal_error_message(exc)
        if _is_html_route(scope):
            return HTMLResponse(error_page("Internal error", message), status_code=500)
        return JSONResponse({"error": message, "type": INTERNAL_ERROR}, status_code=500)
