"""The MLflow run of an encoder raystudy did not train, scored by `raystudy evaluate
--experiment` (`raystudy.evaluate`): tagged `raystudy.role = external`, with the params of the
dataset, split and evaluation it was scored with (the columns a trial's run has for them, so
the analysis puts it in the same cell as the study's trials) and the scores at step 0.
"""

from __future__ import annotations

from collections.abc import Mapping

import mlflow
from mlflow.entities import Param
from mlflow.tracking import MlflowClient

from raystudy.data.splits.registry import split_tag
from raystudy.spec import TrialConfig
from raystudy.spec.grid import flatten
from raystudy.spec.url_secrets import expand
from raystudy.tags import (
    EXPERIMENT_TAGS,
    EXTERNAL_ROLE,
    MODEL_TAG,
    PARENT_TAG,
    ROLE_TAG,
    RUN_FINISHED,
    SPLIT_TAG,
    STUDY_TAG,
    VERSION_TAG,
    probe_tag,
)
from raystudy.tracking.batches import MAX_PARAMS, chunks, log_metrics
from raystudy.tracking.retry import refusing, retry_busy


def external_params(config: TrialConfig) -> dict[str, str]:
    """The dataset, split and evaluation params, keyed as a trial's run keys them."""
    data = config.model_dump(mode="json", include={"dataset", "split", "evaluation"})
    return {k: str(v) for k, v in flatten(data).items()}


def log_external_run(
    tracking_uri: str | None,
    experiment: str,
    encoder: str,
    config: TrialConfig,
    results: Mapping[str, float],
    *,
    parent_run_id: str | None = None,
    version: str = "",
) -> str:
    """A FINISHED run of `encoder`'s `results` in `experiment` (created if missing); returns
    its id. `parent_run_id` nests it under a study's parent run in the UI. Raises
    `TrackingUnreachable` or `TrackingRejected` naming the store."""
    uri = tracking_uri or mlflow.get_tracking_uri()
    client = MlflowClient(expand(uri))
    with refusing(uri):
        found = retry_busy(lambda: client.get_experiment_by_name(experiment))
        experiment_id = (
            found.experiment_id
            if found is not None
            else retry_busy(
                lambda: client.create_experiment(experiment, tags=dict(EXPERIMENT_TAGS))
            )
        )
        tags = {
            ROLE_TAG: EXTERNAL_ROLE,
            STUDY_TAG: experiment,
            MODEL_TAG: encoder,
            SPLIT_TAG: split_tag(config.split),
            VERSION_TAG: version,
        }
        if parent_run_id:
            tags[PARENT_TAG] = parent_run_id
        # How each probe was computed (`raystudy.scoring.Scores.probes`), as on a trial run.
        tags.update({probe_tag(n): how for n, how in getattr(results, "probes", {}).items()})
        run = retry_busy(
            lambda: client.create_run(experiment_id, run_name=f"external:{encoder}", tags=tags)
        )
        run_id = run.info.run_id
        params = [Param(k, v) for k, v in external_params(config).items()]
        params.append(Param("encoder", encoder[:6000]))
        for chunk in chunks(params, MAX_PARAMS):
            retry_busy(lambda chunk=chunk: client.log_batch(run_id, params=chunk))
        log_metrics(client, run_id, results, step=0)
        retry_busy(lambda: client.set_terminated(run_id, status=RUN_FINISHED))
    return run_id
