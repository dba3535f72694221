"""The RM client's addresses in messages, the order of an epoch's applications, and the
wait through an RM outage.

The unreachable RM is a real closed loopback port (nothing listens); the outage is the
stand-in RM of ``tests/resource_manager_stand_in.py`` answering 503 (no cluster here).
"""

from __future__ import annotations

import socket
import threading
import time

import pytest

from airflow_provider_eo.clients.yarn_resource_manager import (
    ResourceManager,
    ResourceManagerUnavailable,
    YarnApplication,
    without_userinfo,
)
from airflow_provider_eo.operators import yarn_tracking
from airflow_provider_eo.operators.yarn_tracking import YarnTracking, application_order
from tests.resource_manager_stand_in import stand_in_resource_manager


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://ops:Zq7hunter2xyz@rm:8088", "http://rm:8088"),
        ("https://ops@rm.example.com:8090/proxy", "https://rm.example.com:8090/proxy"),
        ("http://rm:8088", "http://rm:8088"),
    ],
)
def test_an_address_is_shown_without_its_credentials(url: str, shown: str) -> None:
    assert without_userinfo(url) == shown


def test_an_unreachable_rm_is_named_without_the_password_of_its_address() -> None:
    port = closed_port()
    rm = ResourceManager(f"ops:Zq7hunter2xyz@127.0.0.1:{port}", where="Spark connection 'spark_yarn'")
    with pytest.raises(ResourceManagerUnavailable) as raised:
        rm.queues()
    message = str(raised.value)
    assert message.startswith(
        f"YARN ResourceManager http://127.0.0.1:{port} (Spark connection 'spark_yarn') did not answer"
    )
    assert "Zq7hunter2xyz" not in message
    assert rm.base_url == f"http://ops:Zq7hunter2xyz@127.0.0.1:{port}"  # the calls keep the login


def app(app_id: str) -> YarnApplication:
    return YarnApplication(app_id, "eo-write-p", "root.default", "eo", "RUNNING", "UNDEFINED", "", ())


def test_applications_are_ordered_by_their_numbers_not_their_text() -> None:
    ids = [
        "application_1795880870738_10000",
        "application_1795880870738_9999",
        "application_1695880870738_20000",
    ]
    ordered = sorted((app(i) for i in ids), key=application_order)
    assert [a.id for a in ordered] == [
        "application_1695880870738_20000",
        "application_1795880870738_9999",
        "application_1795880870738_10000",
    ]


def test_an_rm_outage_at_the_start_is_waited_out_not_taken_for_a_missing_application(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The RM answers 503 for longer than the appearance limit; the application (already
    accepted) is reported once it answers again: the wait returns it instead of raising
    "no YARN application tagged ..." (the limit counts only polls the RM answered)."""
    monkeypatch.setattr(yarn_tracking, "APPEAR_S", 0.2)
    with stand_in_resource_manager() as rm:
        rm.answering = False
        tracking = YarnTracking(
            ResourceManager(rm.url, where="test"), "eo-submission-x", "pipeline p epoch 1", 0.05
        )

        def back_after_the_limit() -> None:
            time.sleep(0.8)
            rm.register(["eo-submission-x"], state="FINISHED", finalStatus="SUCCEEDED")
            rm.answering = True

        restart = threading.Thread(target=back_after_the_limit)
        restart.start()
        app = tracking.wait()
        restart.join()
    assert (app.id, app.state, app.final_status) == ("application_1_0001", "FINISHED", "SUCCEEDED")
    assert rm.kills == []
