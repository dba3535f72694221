"""Following and killing a write submission's YARN application through the ResourceManager.

In YARN cluster deploy mode spark-submit returns once YARN accepted the application
(``spark.yarn.submit.waitAppCompletion=false``, :mod:`.yarn_submission`); the write step's
result is then the application's, as the RM reports it: :meth:`YarnTracking.wait` polls
``GET /ws/v1/cluster/apps?applicationTags=<the submission's tag>`` until the application
has ended, returns it when it FINISHED with final status SUCCEEDED, and raises
:class:`YarnApplicationFailed` with the RM's state, final status and diagnostics
otherwise. The RM may be away a while (a restart): polls that fail are retried for
:data:`RM_OUTAGE_S` seconds before ``ResourceManagerUnavailable`` ends the step. If the
wait is interrupted (the task timed out), the application is killed first. An application
that ended KILLED or FAILED (its ApplicationMaster never unregistered) gets its staging
directory removed (``clean``, :mod:`.yarn_staging`) before the step fails.

:meth:`YarnTracking.kill` (what ``on_kill`` calls) kills every application carrying the
tag that has not ended: ``PUT /ws/v1/cluster/apps/<id>/state {"state": "KILLED"}``.
It needs no spark-submit process, so it reaches a driver whose spark-submit is gone.

:func:`submit_tracked` is the write step in YARN cluster deploy mode: the hook's
spark-submit, then :meth:`YarnTracking.wait`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk.exceptions import AirflowException

from airflow_provider_eo.clients.yarn_resource_manager import (
    ResourceManager,
    ResourceManagerUnavailable,
    YarnApplication,
)
from airflow_provider_eo.errors import ClusterAccessError, TaskError

log = logging.getLogger(__name__)

#: How long the RM may fail to answer, in a row, before the wait gives up.
RM_OUTAGE_S = 120.0
#: How long an application may take to appear under its tag once spark-submit returned.
APPEAR_S = 30.0


class YarnApplicationFailed(TaskError, RuntimeError):
    """The write's YARN application ended other than FINISHED/SUCCEEDED (or never appeared);
    the message carries the RM's state, final status and diagnostics."""


@dataclass
class YarnTracking:
    """The application of one submission, known to ``rm`` by ``tag``; ``what`` names the
    pipeline and epoch in messages; ``clean`` is called with an application that ended
    unsucceeded (its staging directory). ``application`` is the last report read."""

    rm: ResourceManager
    tag: str
    what: str
    poll_s: float = 1.0
    clean: Callable[[YarnApplication], object] | None = None
    application: YarnApplication | None = field(default=None, init=False)

    def find(self) -> YarnApplication | None:
        """The application carrying the tag (the newest if several), or None."""
        apps = sorted(self.rm.applications_tagged(self.tag), key=application_order)
        if apps:
            self.application = apps[-1]
        return apps[-1] if apps else None

    def wait(self) -> YarnApplication:
        """Poll until the application has ended; return it when it succeeded (module doc).

        Raises :class:`YarnApplicationFailed` (it failed, was killed, or never appeared
        within :data:`APPEAR_S`), ``ResourceManagerUnavailable`` after :data:`RM_OUTAGE_S`
        of failed polls. Whatever it raises, it first tries to kill the application (best
        effort: an RM that does not answer leaves it to the next try's fencing)."""
        try:
            app = self._until_ended()
        except (YarnApplicationFailed, ClusterAccessError):
            self.kill()
            raise
        except BaseException:
            self.kill()
            self._clean_once_ended()
            raise
        if not app.succeeded:
            if self.clean is not None:
                self.clean(app)
            raise YarnApplicationFailed(self.describe(app))
        return app

    def describe(self, app: YarnApplication) -> str:
        """The message of ``app``'s end: what, id, state, final status, diagnostics, RM."""
        diagnostics = app.diagnostics.strip() or "none"
        return (
            f"{self.what}: YARN application {app.id} ended {app.state} with final status "
            f"{app.final_status} (ResourceManager {self.rm.shown_url}, {self.rm.where}); "
            f"diagnostics: {diagnostics}"
        )

    def kill(self) -> list[str]:
        """Kill every application with the tag that has not ended; returns their ids.
        Best effort: a failed RM call is logged, not raised (``on_kill`` must go on)."""
        try:
            running = [app for app in self.rm.applications_tagged(self.tag) if not app.finished]
        except ClusterAccessError as exc:
            log.warning(
                "%s: cannot list the applications tagged %s to kill them: %s", self.what, self.tag, exc
            )
            return []
        killed = []
        for app in running:
            try:
                state = self.rm.kill(app.id)
            except ClusterAccessError as exc:
                log.warning("%s: YARN application %s not killed: %s", self.what, app.id, exc)
                continue
            log.info(
                "%s: YARN application %s killed through the ResourceManager (state %s)",
                self.what,
                app.id,
                state,
            )
            killed.append(app.id)
        return killed

    def _clean_once_ended(self, within_s: float = 30.0) -> None:
        """After a kill: wait (at most ``within_s``) for the application to end, then ``clean`` it."""
        deadline = time.monotonic() + within_s
        while self.clean is not None and time.monotonic() < deadline:
            try:
                app = self.find()
            except ClusterAccessError:
                return
            if app is None or app.finished:
                if app is not None:
                    self.clean(app)
                return
            time.sleep(self.poll_s)

    def _until_ended(self) -> YarnApplication:
        started = time.monotonic()
        failing_since: float | None = None
        last_state = None
        while True:
            try:
                app = self.find()
                failing_since = None
            except ResourceManagerUnavailable as exc:
                failing_since = failing_since or time.monotonic()
                if time.monotonic() - failing_since > RM_OUTAGE_S:
                    raise
                log.warning(
                    "%s: ResourceManager did not answer, still tracking %s: %s", self.what, self.tag, exc
                )
                app = self.application
            if app is None and failing_since is None and time.monotonic() - started > APPEAR_S:
                raise YarnApplicationFailed(
                    f"{self.what}: no YARN application tagged {self.tag} at ResourceManager "
                    f"{self.rm.shown_url} ({self.rm.where}) {APPEAR_S:.0f} s after spark-submit returned"
                )
            if app is not None and failing_since is None:
                if app.state != last_state:
                    log.info("%s: YARN application %s is %s", self.what, app.id, app.state)
                    last_state = app.state
                if app.finished:
                    return app
            time.sleep(self.poll_s)


def application_order(app: YarnApplication) -> tuple[int, ...]:
    """``app``'s place among applications by id (``application_<cluster ts>_<seq>``), by number:
    ``..._10000`` after ``..._9999``; an id of another shape sorts first."""
    numbers = app.id.split("_")[1:]
    return tuple(int(n) for n in numbers) if all(n.isdigit() for n in numbers) else (-1,)


def submit_tracked(hook: SparkSubmitHook, application: str, tracking: YarnTracking) -> YarnApplication:
    """``hook.submit(application)`` (spark-submit returns once YARN accepted the application),
    then :meth:`YarnTracking.wait`; returns the succeeded application. A failed spark-submit
    whose application reached YARN reports that application's end (its diagnostics); one
    that never reached YARN raises the hook's ``AirflowException`` (spark-submit's output)."""
    try:
        hook.submit(application)
    except AirflowException as submit_error:
        if tracking.find() is None:
            raise
        app = tracking.wait()  # raises with the diagnostics unless it somehow succeeded
        raise AirflowException(f"{tracking.describe(app)}; but spark-submit failed") from submit_error
    app = tracking.wait()
    log.info("%s: YARN application %s %s/%s", tracking.what, app.id, app.state, app.final_status)
    return app
