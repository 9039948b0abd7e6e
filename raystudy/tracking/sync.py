"""A finished trial's MLflow run completed from Tune's record of it, when the store missed
its writes (an outage, a killed worker): the driver calls it at the study's end and on resume.
"""

from __future__ import annotations

from raystudy.tags import FROM_TUNE, RUN_FINISHED, SYNCED_TAG
from raystudy.tracking.reader import RunRecord
from raystudy.tracking.retry import TrackingUnreachable, reaching
from raystudy.tracking.trial_run import TrialRun


def sync_run(uri: str, experiment_id: str, parent_run_id: str | None, record: RunRecord) -> bool:
    """Complete a finished trial's run from `record`: create it if it is missing, log every
    point it lacks (a step already logged for a key is not logged again), mark it FINISHED.

    Returns whether it wrote anything (False for a run that had already finished); raises
    `TrackingUnreachable` when the store still cannot be reached.
    """
    run = TrialRun.open(
        uri,
        experiment_id,
        record.trial_id,
        record.name,
        record.params,
        record.tags,
        parent_run_id,
    )
    if run.offline is None and run.finished is None:
        keys = sorted({k for _, row in record.history for k in row})
        logged = {k: run.logged_steps(k) for k in keys}
        points = [
            (k, v, step)
            for step, row in record.history
            for k, v in row.items()
            if step not in logged[k]
        ]
        with reaching(uri):
            have = run.client.get_run(run.run_id).data.metrics if run.offline is None else {}
        points += [(k, v, record.final_step) for k, v in record.final.items() if k not in have]
        run.log_points(points)
        run.set_tags({SYNCED_TAG: FROM_TUNE})
        run.finish(RUN_FINISHED)
    if run.offline is not None:
        raise TrackingUnreachable(run.offline)
    return run.finished is None
