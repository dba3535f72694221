"""What the demo prints last: where the Airflow UI is, how to log in, and what to look at.

The password is not printed: it stays in the stack's private login file (mode 600),
whose path is printed with the command that shows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from airflow_provider_eo.dags.factory import backfill_dag_id, stream_dag_id


def closing_guide(
    *,
    url: str,
    username: str,
    login_file: Path,
    pipeline: str,
    topic: str,
    stream_runs: int,
    state_dir: Path,
    other_pipelines: Sequence[str] = (),
) -> str:
    """The closing text of a successful demo (multi-line); ``other_pipelines``: the demo's
    further pipelines (one line each: their stream DAG)."""
    stream, backfill = stream_dag_id(pipeline), backfill_dag_id(pipeline)
    others = [
        f"  - {url}/dags/{stream_dag_id(other)}  the stream DAG of {other}, the same way"
        for other in other_pipelines
    ]
    return "\n".join(
        [
            "",
            f"Airflow is running: open {url}",
            f"  user:     {username}",
            f"  password: in {login_file}  (show it: python3 -m json.tool {login_file})",
            "What to look at:",
            f"  - {url}/dags/{stream}  the stream DAG's Grid: this demo's {stream_runs} runs, one"
            " epoch each; its write and commit tasks name their epoch (id, records, ranges)",
            f"  - {url}/dags/{backfill}  the backfill DAG: the replay of {topic}[0]; its"
            " Trigger form takes topics, partitions and offsets or times",
            f"  - {url}/plugin/eo-epochs/eo/?pipeline={quote(pipeline)}  the Epochs page ('Epochs' in"
            f" the navigation, a tab on each DAG; alone at {url}/eo/?dag_id={quote(stream)}): the"
            f" charts of {pipeline} (lag, records, each epoch's phases, dead letters), every epoch"
            " with a link to its own page, cursors, lag",
            *others,
            f"Stop everything: eo-stack down --state-dir {state_dir}",
        ]
    )
