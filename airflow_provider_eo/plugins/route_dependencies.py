"""What every route of the plugin's app depends on (FastAPI ``Depends``): the request's
ledger (:data:`LedgerDep`, opened from ``app.state.ledger_factory`` and closed after the
request) and the caller's :class:`~.access.PipelineAccess` (:data:`AccessDep`, from
``app.state.resolve_access``). Shared by :mod:`.app` and :mod:`.audit_routes`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Annotated

from fastapi import Depends, Request

from airflow_provider_eo.ledger.model.ledger_roles import LedgerReads
from airflow_provider_eo.plugins.access import EveryPipeline, PipelineAccess

LedgerFactory = Callable[[], LedgerReads]
AccessResolver = Callable[[Request], Awaitable[PipelineAccess]]


def _ledger(request: Request) -> Iterator[LedgerReads]:
    """Dependency: a ledger from the app's factory, closed after the request. What the
    factory raises propagates (``LedgerUnavailable``: 503; anything else: 500)."""
    opened: LedgerReads = request.app.state.ledger_factory()
    try:
        yield opened
    finally:
        opened.close()


LedgerDep = Annotated[LedgerReads, Depends(_ledger)]


async def everyone(request: Request) -> PipelineAccess:
    """The default access resolver: every pipeline is visible."""
    return EveryPipeline()


async def _access(request: Request) -> PipelineAccess:
    """Dependency: the caller's :class:`PipelineAccess`, from the app's resolver."""
    resolve: AccessResolver = request.app.state.resolve_access
    return await resolve(request)


AccessDep = Annotated[PipelineAccess, Depends(_access)]
