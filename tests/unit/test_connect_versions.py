"""Spark Connect client and server versions: one feature release, or a refusal naming both."""

from __future__ import annotations

import pyspark
import pytest

from airflow_provider_eo.spark.connect_versions import (
    ConnectVersionMismatch,
    check_connect_versions,
    check_session_versions,
    feature_release,
)


@pytest.mark.parametrize(
    ("version", "release"),
    [("4.3.0", (4, 3)), ("4.3.1-SNAPSHOT", (4, 3)), ("4.3.0.dev1", (4, 3)), ("10.0", (10, 0))],
)
def test_feature_release(version: str, release: tuple[int, int]) -> None:
    assert feature_release(version) == release


def test_feature_release_refuses_text_that_is_no_version() -> None:
    with pytest.raises(ValueError, match="not a Spark version: 'latest'"):
        feature_release("latest")


def test_a_patch_release_apart_is_accepted() -> None:
    check_connect_versions("4.3.0", "4.3.2")
    check_connect_versions("4.3.1", "4.3.0")


@pytest.mark.parametrize(("client", "server"), [("4.3.0", "4.2.0"), ("4.3.0", "3.5.1"), ("4.2.0", "4.3.0")])
def test_another_feature_release_is_refused_naming_both(client: str, server: str) -> None:
    with pytest.raises(ConnectVersionMismatch) as info:
        check_connect_versions(client, server, server="'spark_connect' (sc://connect:15002)")
    assert str(info.value).startswith(
        f"Spark Connect server 'spark_connect' (sc://connect:15002) runs Spark {server} but this task's "
        f"pyspark client is {client}: "
    )


class _Session:
    """What the check reads of a Spark Connect session: the server's ``spark.version``."""

    def __init__(self, version: str) -> None:
        self.version = version


def test_session_versions_compare_this_processs_pyspark() -> None:
    major, minor = feature_release(pyspark.__version__)
    assert check_session_versions(_Session(f"{major}.{minor}.99")) == f"{major}.{minor}.99"
    with pytest.raises(ConnectVersionMismatch, match=f"pyspark client is {pyspark.__version__}"):
        check_session_versions(_Session(f"{major}.{minor + 1}.0"))
