"""The Spark Connect client's retries of a lost server in session mode (docs/spark.md, "Session
mode", a Connect server killed mid-epoch): waits of at most 5.5 s (5 s and its jitter), so a
write reaches a restarted server within seconds of it answering, and about 10 minutes in all,
as the client's default tolerates."""

from __future__ import annotations

from pyspark.sql.connect.client.retries import DefaultPolicy, RetryPolicyState

from airflow_provider_eo.spark.session.session_write import lost_server_retry_policy


def waits_ms(policy: DefaultPolicy) -> list[int]:
    """Every wait the policy grants before it gives up (the client's own state machine)."""
    state = RetryPolicyState(policy)
    waits = []
    while (wait := state.next_attempt()) is not None:
        waits.append(wait)
    return waits


def test_a_lost_server_is_retried_every_five_seconds_for_about_ten_minutes() -> None:
    waits = waits_ms(lost_server_retry_policy())
    assert waits[:3] == [50, 200, 800]
    assert 3_200 <= waits[3] <= 3_700  # 3.2 s and its jitter (0.5 s at most)
    assert all(5_000 <= wait <= 5_500 for wait in waits[4:])
    assert 600_000 <= sum(waits) <= 700_000


def test_the_clients_default_waits_up_to_a_minute_between_retries() -> None:
    waits = waits_ms(DefaultPolicy())
    assert max(waits) >= 60_000  # what the session-mode policy replaces
    assert sum(waits) >= 600_000
