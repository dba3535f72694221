"""``eo-ledger dead-letters replay``: replay a pipeline's dead letters as a backfill run.

::

    eo-ledger dead-letters replay --pipeline P [--epoch N]
        [--topic T [--partition P] [--from-offset A] [--to-offset B]] [--reason TEXT]
        [--pipelines-file PATH] [--show N] (--dry-run | --yes)

Selects the pipeline's unresolved dead letters of committed epochs matching every filter
given (``ledger/planning/replay_plan.py``), reports them (count, chunks, offsets per partition up
to ``--show``) and, with ``--yes`` (not ``--dry-run``), triggers the pipeline's backfill
DAG with the run conf ``{"replay_dead_letters": <filter>}`` through Airflow's REST API
(connection ``airflow_api``); the answer names the new ``dag_run_id``. The run plans the
same selection again, writes exactly those records as backfill epochs and marks them
resolved when each epoch commits. This command itself changes nothing in the ledger.

Refusals (exit 2, nothing changed, no run triggered): a pipeline the pipelines file does
not declare; no filter; every matching dead letter already resolved (a no-op that names
the resolving epochs); nothing matching at all; neither ``--dry-run`` nor ``--yes``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from airflow_provider_eo.dag_ids import backfill_dag_id
from airflow_provider_eo.ledger.model.ledger_roles import ProtocolStore
from airflow_provider_eo.ledger.planning.replay_plan import ReplayFilter, ReplayPlan
from airflow_provider_eo.operators.backfill_request_form import replay_conf, replay_filter_from_conf

#: Offsets listed per partition in the answer unless ``--show`` says otherwise.
DEFAULT_SHOWN = 20


class ReplayRefused(Exception):
    """The replay is refused (exit 2, nothing changed); ``eo_ledger`` reports it as ``Refused``."""


def add_replay_parser(dead_letter_commands: Any) -> argparse.ArgumentParser:
    """Add ``replay`` to the ``dead-letters`` subcommands (an argparse subparsers action)."""
    replay = dead_letter_commands.add_parser(
        "replay", help="replay dead letters as a backfill run once their cause is fixed"
    )
    replay.add_argument("--pipeline", required=True)
    replay.add_argument("--epoch", type=int, help="the dead letters of this epoch")
    replay.add_argument("--topic", help="the dead letters of this topic (with the options below)")
    replay.add_argument("--partition", type=int)
    replay.add_argument("--from-offset", type=int, help="inclusive")
    replay.add_argument("--to-offset", type=int, help="exclusive")
    replay.add_argument("--reason", help="a case-insensitive substring of the dead letter's error")
    replay.add_argument("--pipelines-file", help="pipelines YAML (default: $EO_PIPELINES_FILE)")
    replay.add_argument("--airflow-conn-id", default="airflow_api", help="Airflow REST API connection")
    replay.add_argument("--show", type=int, default=DEFAULT_SHOWN, help="offsets listed per partition")
    replay.add_argument(
        "--dry-run", action="store_true", help="report what would be replayed, trigger nothing"
    )
    replay.add_argument("--yes", action="store_true", help="confirm: trigger the backfill run")
    return replay


def replay_filter(args: argparse.Namespace, refused: type[Exception] = ReplayRefused) -> ReplayFilter:
    """The filter the options give (``replay_filter_from_conf``, the run conf's parser:
    the same checks as a backfill run's); ``refused`` when it is empty or inconsistent."""
    conf = {
        "epoch": args.epoch,
        "topic": args.topic,
        "partition": args.partition,
        "from_offset": args.from_offset,
        "to_offset": args.to_offset,
        "reason": args.reason,
    }
    try:
        return replay_filter_from_conf(
            {k: v for k, v in conf.items() if v is not None}, "dead-letters replay"
        )
    except ValueError as exc:
        raise refused(str(exc)) from exc


def run_replay(
    args: argparse.Namespace, ledger: ProtocolStore, refused: type[Exception] = ReplayRefused
) -> dict[str, Any]:
    """Plan (and with ``--yes``, trigger) the replay ``args`` ask for over ``ledger``;
    the JSON answer. Raises ``refused`` (exit 2) for the refusals of the module docstring,
    before anything is triggered, and ``AirflowApiError`` when the trigger fails (exit 1)."""
    from airflow_provider_eo.config import PipelineConfigError, load_pipeline
    from airflow_provider_eo.ledger.protocol import OperatorTools

    if not args.dry_run and not args.yes:
        raise refused("refusing to trigger a replay without --yes (or report it with --dry-run)")
    wanted = replay_filter(args, refused)
    try:
        spec = load_pipeline(args.pipeline, args.pipelines_file)
    except PipelineConfigError as exc:
        raise refused(str(exc)) from exc
    plan = OperatorTools(ledger).plan_replay(spec, wanted)
    refusal = plan.refusal(spec.name, wanted)
    if refusal is not None:
        raise refused(refusal)
    dag_id = backfill_dag_id(spec.name)
    conf = replay_conf(wanted)
    answer = replay_report(spec.name, wanted, plan, args.show)
    answer |= {"dry_run": bool(args.dry_run), "dag_id": dag_id, "conf": conf, "dag_run_id": None}
    if not args.dry_run:
        from airflow_provider_eo.clients.airflow_rest import AirflowApi
        from airflow_provider_eo.clients.connections import ConnectionNotFound
        from airflow_provider_eo.ledger.model.actors import Actor

        note = f"eo-ledger dead-letters replay by {Actor.cli().name}: {answer['records']} record(s)"
        try:
            answer["dag_run_id"] = AirflowApi(args.airflow_conn_id).trigger_dag_run(dag_id, conf, note)
        except ConnectionNotFound as exc:
            raise refused(
                f"cannot trigger {dag_id} ({exc}): set the connection, or trigger {dag_id} from the "
                f"Airflow UI with the run conf {json.dumps(conf)}"
            ) from exc
    return answer


def replay_report(pipeline: str, wanted: ReplayFilter, plan: ReplayPlan, shown: int) -> dict[str, Any]:
    """What ``plan`` replays: the filter, record and chunk counts, each chunk's ranges with
    their selected counts, and per partition the first ``shown`` offsets."""
    return {
        "pipeline": pipeline,
        "filter": wanted.given(),
        "records": plan.record_count,
        "already_resolved": plan.already_resolved,
        "chunks": [
            [
                {
                    "topic": r.topic,
                    "partition": r.partition,
                    "start": r.start,
                    "end": r.end,
                    "selected": len(r.offsets),
                }
                for r in chunk
            ]
            for chunk in plan.chunks
        ],
        "partitions": [
            {
                "topic": topic,
                "partition": partition,
                "count": len(offsets),
                "offsets": list(offsets[: max(shown, 0)]),
                "more": max(len(offsets) - max(shown, 0), 0),
            }
            for (topic, partition), offsets in sorted(plan.selected.items())
        ],
    }
